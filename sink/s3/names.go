package s3

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// Keys (see the package documentation):
//
//	<prefix><job>/[<bucket>/]part-<job>-<F>-w<writer>-<seq>.<ext>   an object, visible once completed
//	<prefix>_connector/<job>/tails/<object name>/<n>                a delta: tail bytes pre-committed at n
//
// bucket is the record's directory by path_template (none without one),
// F (12 digits) is the first checkpoint whose records the object holds,
// seq counts the objects its writer opened since barrier F-1 (in any
// bucket, so the object name alone is unique in the job), n (12 digits)
// is the barrier whose pre-commit wrote the delta.
type names struct {
	job, ext string
	dir      string         // <prefix><job>/: the job's visible objects
	tails    string         // <prefix>_connector/<job>/tails/: the job's deltas
	object   *regexp.Regexp // a key of an object of this job
	delta    *regexp.Regexp // a key of a delta of this job
}

// bucketPattern matches what pathtmpl.ValidDir accepts.
const bucketPattern = `[A-Za-z0-9=-][A-Za-z0-9._=-]*(?:/[A-Za-z0-9=-][A-Za-z0-9._=-]*)*`

func newNames(prefix, job, ext string) names {
	dir := prefix + job + "/"
	tails := prefix + "_connector/" + job + "/tails/"
	base := `part-` + regexp.QuoteMeta(job) + `-(\d{12,})-w(\d+)-(\d+)\.(?:jsonl|raw|parquet)`
	return names{
		job: job, ext: ext, dir: dir, tails: tails,
		object: regexp.MustCompile(`^` + regexp.QuoteMeta(dir) + `(?:` + bucketPattern + `/)?` + base + `$`),
		delta:  regexp.MustCompile(`^` + regexp.QuoteMeta(tails) + `(` + base + `)/\d{12,}$`),
	}
}

// objectKey is the key of writer's seq-th object opened after barrier
// first-1, in bucket ("": none), and its name (the last part of the key).
func (n names) objectKey(bucket string, first checkpoint.ID, writer, seq int) (key, base string) {
	base = fmt.Sprintf("part-%s-%012d-w%d-%d.%s", n.job, first, writer, seq, n.ext)
	return n.dir + pathtmpl.Join(bucket, base), base
}

// base returns the name of an object key of this job (after its bucket).
func (n names) base(key string) string {
	_, base := pathtmpl.Split(key[len(n.dir):])
	return base
}

// bucket returns the bucket of an object key of this job ("": none).
func (n names) bucket(key string) string {
	bucket, _ := pathtmpl.Split(key[len(n.dir):])
	return bucket
}

// deltaDir is the common prefix of the deltas of the object named base.
func (n names) deltaDir(base string) string { return n.tails + base + "/" }

// deltaKey is the delta of object base that pre-commit id writes.
func (n names) deltaKey(base string, id checkpoint.ID) string {
	return fmt.Sprintf("%s%012d", n.deltaDir(base), id)
}

// parseObject returns the first checkpoint, writer and seq of an object
// key of this job; false for any other key.
func (n names) parseObject(key string) (first checkpoint.ID, writer, seq int, ok bool) {
	m := n.object.FindStringSubmatch(key)
	if m == nil {
		return 0, 0, 0, false
	}
	f, err1 := strconv.ParseUint(m[1], 10, 64)
	w, err2 := strconv.Atoi(m[2])
	s, err3 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, false
	}
	return checkpoint.ID(f), w, s, true
}

// deltaObject returns the object base name a delta key of this job
// belongs to; false for any other key.
func (n names) deltaObject(key string) (base string, ok bool) {
	m := n.delta.FindStringSubmatch(key)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// firstAfter is the ListObjects start-after key from which the job's
// objects outside buckets with F > id are listed (names sort by F).
// Buckets sort by their names: those before "part-" precede it, the others
// follow (none starts with "part-": pathtmpl refuses it).
func (n names) firstAfter(id checkpoint.ID) string {
	return fmt.Sprintf("%spart-%s-%012d-~", n.dir, n.job, id) // after every F = id key: '~' > 'w'
}
