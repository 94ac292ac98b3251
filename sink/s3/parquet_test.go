package s3

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/parquetfile"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// parquetCols are the columns of the Parquet tests: the id and pad of
// pqValue.
var parquetCols = []parquetfile.Column{
	{Name: "id", Type: parquetfile.TypeInt64},
	{Name: "pad", Type: parquetfile.TypeString},
}

// parquetFormat configures format: parquet with the given compression,
// objects that roll only at the end (roll_size 1 MiB) and row groups
// flushed only at checkpoints.
func parquetFormat(compression string, mod func(*Config)) func(*Config) {
	return func(c *Config) {
		c.Format = filefmt.Parquet
		c.Parquet = filefmt.ParquetConfig{Columns: slices.Clone(parquetCols), Compression: compression, RowGroupSize: config.MiB}
		c.RollSize = config.MiB
		if mod != nil {
			mod(c)
		}
	}
}

// pqPad is record id's pad: padLen hex digits that differ from every other
// record's (they neither compress nor fit a dictionary).
func pqPad(id, padLen int) string {
	r := rand.New(rand.NewPCG(uint64(id), 7))
	raw := make([]byte, ((padLen+1)/2+7)/8*8)
	for i := 0; i < len(raw); i += 8 {
		binary.LittleEndian.PutUint64(raw[i:], r.Uint64())
	}
	return hex.EncodeToString(raw)[:padLen]
}

func pqValue(id, padLen int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"pad":"%s"}`, id, pqPad(id, padLen))
}

// writePQ writes records [from, to) with pads of padLen.
func writePQ(t *testing.T, w sink.Writer, from, to, padLen int) {
	t.Helper()
	for i := from; i < to; i++ {
		r := &record.Record{Topic: "orders", Offset: int64(i), Value: pqValue(i, padLen)}
		if err := w.Write(ctx, r); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

// readParquet reads one Parquet file with parquet-go's reader: the
// number of times each id is in it and its row groups. A pad that is not
// its id's fails the test.
func readParquet(t *testing.T, name string, data []byte, padLen int) (ids map[int64]int, rowGroups int) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s is not a Parquet file: %v", name, err)
	}
	ids = map[int64]int{}
	r := parquet.NewReader(f)
	defer r.Close()
	row := make([]parquet.Row, 1)
	for {
		n, err := r.ReadRows(row)
		if n == 1 {
			id := row[0][0].Int64()
			if pad := row[0][1].String(); pad != pqPad(int(id), padLen) {
				t.Fatalf("%s: record %d has pad %q", name, id, pad)
			}
			ids[id]++
		}
		if err != nil {
			break
		}
	}
	return ids, len(f.RowGroups())
}

// assertParquetOnce checks that the visible objects are Parquet files
// holding ids [from, to), each once, and nothing else; it returns their
// keys and row groups.
func assertParquetOnce(t *testing.T, f *fakeS3, from, to, padLen int) (keys []string, rowGroups int) {
	t.Helper()
	got := map[int64]int{}
	for _, k := range f.keys(jobDir) {
		if !strings.HasSuffix(k, ".parquet") {
			t.Errorf("object %s has no .parquet extension", k)
		}
		data, _ := f.object(k)
		ids, groups := readParquet(t, k, data, padLen)
		for id, n := range ids {
			got[id] += n
		}
		keys, rowGroups = append(keys, k), rowGroups+groups
	}
	checkIDsOnce(t, got, from, to)
	return keys, rowGroups
}

func checkIDsOnce(t *testing.T, got map[int64]int, from, to int) {
	t.Helper()
	missing, dup := 0, 0
	for i := from; i < to; i++ {
		switch got[int64(i)] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
		delete(got, int64(i))
	}
	if missing+dup+len(got) > 0 {
		t.Fatalf("Parquet output: %d missing, %d duplicated, %d unexpected of %d ids", missing, dup, len(got), to-from)
	}
}

// An object spans five checkpoints, each flushing a row group into parts
// (a big one) or a delta (a small one); a crash after the pre-commit of 6
// restores 5: the writer resumes the object from 5's parts, deltas and
// row groups, the replayed records follow, and the end of input writes
// the footer: one object, a row group per checkpoint, every id once.
func TestParquetObjectSpansCheckpointsAndSurvivesACrash(t *testing.T) {
	const pad = 24
	f := newFakeS3(testBucket, testPart)
	pq := parquetFormat(parquetfile.CompressionNone, nil)
	s := newTestSink(t, f, pq)
	w := newTestWriter(t, s, 0)
	bounds := []int{0, 100, 110, 120, 200, 210}
	var restored []sink.Committable
	for id := 1; id <= 5; id++ {
		writePQ(t, w, bounds[id-1], bounds[id], pad)
		restored = checkpointed(t, s, w, checkpoint.ID(id))
	}
	o := decodeAll(t, restored)[len(restored)-1].Open
	if o == nil || len(o.Parts) == 0 || len(o.Tail) == 0 || o.Format == nil || o.Format.Parquet == nil || len(o.Format.Parquet.RowGroups) != 5 {
		t.Fatalf("checkpoint 5 should record an open object with parts, a tail and 5 row groups: %+v", o)
	}
	if !strings.HasSuffix(o.Key, ".parquet") {
		t.Fatalf("key %s", o.Key)
	}
	writePQ(t, w, 210, 400, pad)
	preCommit(t, w, 6) // never completes
	writePQ(t, w, 400, 450, pad)
	_ = w.Close() // the crash

	s2 := newTestSink(t, f, pq)
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w2 := newTestWriter(t, s2, 0)
	writePQ(t, w2, 210, 450, pad) // the source replays from checkpoint 5
	w2.EndInput()
	checkpointed(t, s2, w2, 6)
	keys, groups := assertParquetOnce(t, f, 0, 450, pad)
	if !slices.Equal(keys, []string{o.Key}) || groups != 6 {
		t.Fatalf("objects %v with %d row groups, want %s with 6 (5 checkpoints and the end)", keys, groups, o.Key)
	}
	assertClean(t, f)
}

// An open object no writer goes on with (the job scaled down, or the
// parquet columns changed) is completed by Recover: its tail and the
// footer from the recorded row groups become its last part, or the
// footer alone when no tail is left. Recovering again changes nothing.
func TestParquetOpenObjectIsCompletedAtRecoverWhenNoWriterGoesOn(t *testing.T) {
	const pad = 24
	for _, change := range []string{"scale down", "schema"} {
		for _, tail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tail=%v", change, tail), func(t *testing.T) {
				f := newFakeS3(testBucket, testPart)
				s := newTestSink(t, f, parquetFormat(parquetfile.CompressionZstd, func(c *Config) { c.Parallelism = 2 }))
				w := newTestWriter(t, s, 1)
				writePQ(t, w, 0, 300, pad)
				restored, n := preCommit(t, w, 1), 300
				if tail {
					writePQ(t, w, 300, 310, pad)
					restored, n = preCommit(t, w, 2), 310
				}
				o := decodeAll(t, restored)[0].Open
				if o == nil || len(o.Parts) == 0 || (len(o.Tail) > 0) != tail {
					t.Fatalf("the open object should have parts and tail=%v: %+v", tail, o)
				}
				_ = w.Close()
				changed := parquetFormat(parquetfile.CompressionZstd, func(c *Config) {
					if change == "scale down" {
						c.Parallelism = 1
					} else {
						c.Parallelism = 2
						c.Parquet.Columns = append(c.Parquet.Columns, parquetfile.Column{Name: "x", Type: parquetfile.TypeString, Nullable: true})
					}
				})
				for range 2 {
					s2 := newTestSink(t, f, changed)
					if err := s2.Recover(ctx, restored); err != nil {
						t.Fatalf("Recover: %v", err)
					}
					if keys, _ := assertParquetOnce(t, f, 0, n, pad); !slices.Equal(keys, []string{o.Key}) {
						t.Fatalf("visible %v, want %s", keys, o.Key)
					}
					assertClean(t, f)
				}
				if change == "schema" {
					// The writer goes on with a new object of the new columns.
					s3 := newTestSink(t, f, changed)
					if err := s3.Recover(ctx, restored); err != nil {
						t.Fatalf("Recover: %v", err)
					}
					w3 := newTestWriter(t, s3, 1)
					writePQ(t, w3, n, n+50, pad)
					w3.EndInput()
					checkpointed(t, s3, w3, 3)
					if keys, _ := assertParquetOnce(t, f, 0, n+50, pad); len(keys) != 2 {
						t.Fatalf("visible %v, want the completed object and a new one", keys)
					}
				}
			})
		}
	}
}

// A record that does not fit the columns is a bad record (the runtime
// applies pipeline.on_decode_error) and changes nothing: no object opens
// for it, and an open object goes on.
func TestParquetRecordsThatDoNotFitAreBadRecordsAndTheObjectGoesOn(t *testing.T) {
	const pad = 8
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, parquetFormat(parquetfile.CompressionZstd, nil))
	w := newTestWriter(t, s, 0)
	bad := []string{`{"id":"x","pad":""}`, `[1]`, `{"pad":"no id"}`, ``, `{"id":1,`}
	writeBad := func() {
		t.Helper()
		for _, v := range bad {
			if err := w.Write(ctx, &record.Record{Value: []byte(v)}); !errors.Is(err, sink.ErrBadRecord) {
				t.Fatalf("Write(%s) = %v, want ErrBadRecord", v, err)
			}
		}
	}
	writeBad()
	if d := decodeAll(t, checkpointed(t, s, w, 1)); len(d) != 1 || !d[0].empty() || f.count("NewMultipartUpload") != 0 {
		t.Fatalf("bad records alone opened an object: %+v", d)
	}
	writePQ(t, w, 0, 10, pad)
	writeBad()
	writePQ(t, w, 10, 20, pad)
	checkpointed(t, s, w, 2)
	writeBad()
	writePQ(t, w, 20, 30, pad)
	w.EndInput()
	checkpointed(t, s, w, 3)
	if keys, _ := assertParquetOnce(t, f, 0, 30, pad); len(keys) != 1 {
		t.Fatalf("objects %v, want one", keys)
	}
	assertClean(t, f)
}

// The parquet: section loads with its defaults, and its mistakes name
// their keys.
func TestParquetConfigLoadsAndItsMistakesNameTheirKeys(t *testing.T) {
	section := "  bucket: out\n  format: parquet\n  parquet:\n    columns:\n      - {name: id, type: int64}\n      - {name: city, type: string, nullable: true, field: address.city}\n"
	j, err := config.Parse("job.yaml", []byte(jobYAML+section), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	c := j.Sink.Config.(*Config)
	if c.Format != filefmt.Parquet || len(c.Parquet.Columns) != 2 || c.Parquet.Columns[1].Field != "address.city" ||
		c.Parquet.Compression != parquetfile.CompressionZstd || c.Parquet.RowGroupSize != 32*config.MiB {
		t.Errorf("parquet config %+v", c.Parquet)
	}
	for want, yaml := range map[string]string{
		"sink.parquet.columns":         "  bucket: out\n  format: parquet\n",
		"sink.parquet.columns[0].type": "  bucket: out\n  format: parquet\n  parquet:\n    columns: [{name: id, type: int}]\n",
		"sink.parquet.compression":     "  bucket: out\n  format: parquet\n  parquet:\n    columns: [{name: id, type: int64}]\n    compression: lz4\n",
		"sink.parquet.row_group_size":  "  bucket: out\n  format: parquet\n  parquet:\n    columns: [{name: id, type: int64}]\n    row_group_size: 2GiB\n",
		"sink.parquet":                 "  bucket: out\n  format: jsonl\n  parquet:\n    columns: [{name: id, type: int64}]\n",
	} {
		_, err := config.Parse("job.yaml", []byte(jobYAML+yaml), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v, want a problem naming %s", err, want)
		}
	}
}
