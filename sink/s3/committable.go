package s3

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// committable is the Data of an s3 sink Committable: what one writer's
// pre-commit of checkpoint n recorded (see the package documentation).
//
//	{"complete": [{"key", "upload", "token", "size", "parts": [{"n", "etag", "size"}]}],
//	 "open_objects": [{"key", "upload", "token", "opened", "size", "parts": [...],
//	                   "tail": [{"key", "off", "len"}], "format": {"parquet", "schema"}}]}
//
// A writer with nothing open and nothing rolled still returns one, empty
// ({}), so that the checkpoint tells Recover the last barrier (names after a
// restart start after it).
type committable struct {
	// Complete are the objects that rolled since the writer's previous
	// pre-commit: Commit completes them.
	Complete []completeRec `json:"complete,omitempty"`
	// Opens are the writer's open objects (one per bucket) as they stood
	// at the barrier: Recover resumes them (or completes them, for a
	// writer the job no longer has).
	Opens []*openRec `json:"open_objects,omitempty"`
	// Open is what versions before path_template recorded: the one open
	// object. decode moves it to Opens.
	Open *openRec `json:"open,omitempty"`
}

// completeRec is an object to complete: every part, the last maybe small.
type completeRec struct {
	Key    string    `json:"key"`
	Upload string    `json:"upload"`
	Token  string    `json:"token"` // x-amz-meta-connector-token, set at create
	Size   int64     `json:"size"`
	Parts  []partRec `json:"parts"`
}

// openRec is an open object: its uploaded parts (1..k, each of part_size
// or more) and the deltas that hold the bytes after them, up to Size.
// Format is what continuing or closing its format takes (parquet: the row
// groups in those Size bytes, and the schema); nil for lines.
type openRec struct {
	Key    string         `json:"key"`
	Upload string         `json:"upload"`
	Token  string         `json:"token"`
	Opened time.Time      `json:"opened"` // for roll_age after a restart
	Size   int64          `json:"size"`
	Parts  []partRec      `json:"parts,omitempty"`
	Tail   []deltaRec     `json:"tail,omitempty"`
	Format *filefmt.State `json:"format,omitempty"`
}

// partRec is one uploaded part.
type partRec struct {
	N    int    `json:"n"`
	ETag string `json:"etag"`
	Size int64  `json:"size"`
}

// deltaRec is one delta object: bytes [Off, Off+Len) of its object.
type deltaRec struct {
	Key string `json:"key"`
	Off int64  `json:"off"`
	Len int64  `json:"len"`
}

func (c committable) empty() bool { return len(c.Complete) == 0 && len(c.Opens) == 0 && c.Open == nil }

func partsSize(parts []partRec) int64 {
	var n int64
	for _, p := range parts {
		n += p.Size
	}
	return n
}

func encodeCommittable(id checkpoint.ID, writer int, c committable) sink.Committable {
	data, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("s3 sink: marshal committable: %v", err)) // plain structs always marshal
	}
	return sink.Committable{Checkpoint: id, Writer: writer, Data: data}
}

// decode reads c, refusing what this job's writer c.Writer cannot have
// written: another job's keys, parts out of order, deltas that do not hold
// exactly the tail, two open objects in one bucket. A former single open
// object is returned in Opens.
func (n names) decode(c sink.Committable) (committable, error) {
	var d committable
	bad := func(format string, args ...any) (committable, error) {
		return committable{}, fmt.Errorf("%w: checkpoint %d writer %d: %s", sink.ErrBadCommittable, c.Checkpoint, c.Writer, fmt.Sprintf(format, args...))
	}
	if err := json.Unmarshal(c.Data, &d); err != nil {
		return bad("%v", err)
	}
	if d.Open != nil {
		d.Opens = append([]*openRec{d.Open}, d.Opens...)
		d.Open = nil
	}
	own := func(key string) bool {
		_, w, _, ok := n.parseObject(key)
		return ok && w == c.Writer
	}
	for _, o := range d.Complete {
		if !own(o.Key) {
			return bad("%q is not an object of job %q writer %d", o.Key, n.job, c.Writer)
		}
		if o.Upload == "" || len(o.Parts) == 0 || !numbered(o.Parts) || partsSize(o.Parts) != o.Size {
			return bad("object %s: no upload, or parts that are not 1..k adding up to its size %d", o.Key, o.Size)
		}
	}
	inBucket := map[string]bool{}
	for _, o := range d.Opens {
		if o == nil {
			return bad("an open object is null")
		}
		if !own(o.Key) {
			return bad("%q is not an object of job %q writer %d", o.Key, n.job, c.Writer)
		}
		if o.Upload == "" || !numbered(o.Parts) {
			return bad("open object %s: no upload, or parts that are not 1..k", o.Key)
		}
		bucket := n.bucket(o.Key)
		if inBucket[bucket] {
			return bad("two open objects in bucket %q", bucket)
		}
		inBucket[bucket] = true
		base := n.base(o.Key)
		end := partsSize(o.Parts)
		for i, t := range o.Tail {
			if b, ok := n.deltaObject(t.Key); !ok || b != base {
				return bad("open object %s: %q is not one of its deltas", o.Key, t.Key)
			}
			// Deltas are contiguous and reach from at or before the end of
			// the parts to the object's size.
			if (i == 0 && t.Off > end) || (i > 0 && t.Off != o.Tail[i-1].Off+o.Tail[i-1].Len) || t.Len <= 0 || t.Off+t.Len <= end {
				return bad("open object %s: deltas do not hold bytes %d to %d", o.Key, end, o.Size)
			}
		}
		last := end
		if k := len(o.Tail); k > 0 {
			last = o.Tail[k-1].Off + o.Tail[k-1].Len
		}
		if last != o.Size {
			return bad("open object %s: parts and deltas hold %d bytes, not its size %d", o.Key, last, o.Size)
		}
		if f := o.Format; f != nil && f.Parquet != nil && f.Parquet.Size != o.Size {
			return bad("open object %s: its parquet state is of %d bytes, not its size %d", o.Key, f.Parquet.Size, o.Size)
		}
	}
	return d, nil
}

// numbered reports whether parts are numbered 1..k in order.
func numbered(parts []partRec) bool {
	for i, p := range parts {
		if p.N != i+1 || p.ETag == "" || p.Size <= 0 {
			return false
		}
	}
	return true
}
