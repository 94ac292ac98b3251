package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/internal/s3test"
)

// ---------------------------------------------------------------------------
// The sinks of a group job
//
// Every slot's job writes with the job's one sink section and tells its
// output apart by its job name, <name>.slot-<k>: its own spool dir and
// progress rows (postgres), its own key prefix and deltas (s3). A
// groupSink is such a sink, other than the file sink and spec.KafkaSink
// (whose readers newJob makes): the section, an independent reader of
// what all the slots made visible, and what must hold of the slots' jobs
// once every member stopped.

// groupSink is a group job's sink besides the file and Kafka sinks.
type groupSink interface {
	// section is the sink section of the job's config.
	section() map[string]any
	// reader reads what every slot's job made visible.
	reader(g *groupJob) visibleOutput
	// requireNothingLeft fails the test if a slot's job left anything
	// behind but its output; call it once every member stopped.
	requireNothingLeft(g *groupJob)
}

// pgGroupSink writes to the table t (pgTableDDL) of a fresh database.
type pgGroupSink struct{ dsn string }

func newPGGroupSink(t *testing.T) pgGroupSink { return pgGroupSink{dsn: pgDatabase(t, pgTableDDL)} }

func (s pgGroupSink) section() map[string]any { return pgSink(s.dsn, "t", nil) }

func (s pgGroupSink) table(g *groupJob) *pgJob { return &pgJob{job: g.job, dsn: s.dsn, table: "t"} }

func (s pgGroupSink) reader(g *groupJob) visibleOutput { return pgTable{s.table(g)} }

// requireNothingLeft requires what requireNothingLeftOpen does of the
// database, which is the test's own, so of every slot's job: no session,
// no lock, no prepared transaction; and no spool file in the job's spool
// dirs, each slot's spool/<name>.slot-<k> among them (there is no other).
// The progress table holds the rows of the slots' jobs and of no other,
// each slot's moved past checkpoint 0: each committed as a job of its
// own.
func (s pgGroupSink) requireNothingLeft(g *groupJob) {
	g.t.Helper()
	s.table(g).requireNothingLeftOpen()
	dirs, err := filepath.Glob(filepath.Join(g.dir, "spool", "*"))
	if err != nil {
		g.t.Fatal(err)
	}
	var want []string
	for k := range g.slots {
		want = append(want, filepath.Join(g.dir, "spool", g.slotJob(k)))
	}
	slices.Sort(dirs)
	if slices.Sort(want); !slices.Equal(dirs, want) {
		g.t.Errorf("spool dirs %v, want one per slot: %v", dirs, want)
	}
	rows := pgStrings(g.t, s.dsn, `SELECT format('%s writer %s at %s', job, writer, checkpoint) FROM connector_progress ORDER BY job, writer`)
	committed := map[string]bool{}
	for _, j := range pgStrings(g.t, s.dsn, `SELECT job FROM connector_progress WHERE checkpoint > 0 GROUP BY job`) {
		committed[j] = true
	}
	jobs := pgStrings(g.t, s.dsn, `SELECT DISTINCT job FROM connector_progress ORDER BY job`)
	var slotJobs []string
	for k := range g.slots {
		slotJobs = append(slotJobs, g.slotJob(k))
		if !committed[g.slotJob(k)] {
			g.t.Errorf("the progress table holds no commit of %s: %v", g.slotJob(k), rows)
		}
	}
	if slices.Sort(slotJobs); !slices.Equal(jobs, slotJobs) {
		g.t.Errorf("the progress table holds the rows of %v, want those of the slots' jobs %v", jobs, slotJobs)
	}
	g.t.Logf("progress of the slots' jobs: %v", rows)
}

// s3GroupSink writes objects of format to a fresh bucket, under out/.
type s3GroupSink struct {
	snk    map[string]any
	c      s3test.Config
	bucket string
	format string
}

func newS3GroupSink(t *testing.T, format string) s3GroupSink {
	snk, c, bucket := s3Sink(t, format)
	return s3GroupSink{snk: snk, c: c, bucket: bucket, format: format}
}

func (s s3GroupSink) section() map[string]any { return s.snk }

func (s s3GroupSink) reader(g *groupJob) visibleOutput {
	return newS3Output(g.t, s.c, s.bucket, "out/", s.format)
}

// requireNothingLeft requires that no multipart upload and no delta is
// left anywhere under out/ (so of no slot's job), and that every object
// there is a slot's: out/<name>.slot-<k>/part-<name>.slot-<k>-..., with
// objects of every slot.
func (s s3GroupSink) requireNothingLeft(g *groupJob) {
	g.t.Helper()
	left := s3Leftovers(g.t, s.c, s.bucket, "out/")
	if len(left) > 0 {
		g.t.Errorf("after the final stop the bucket still holds: %v", left)
	}
	re := regexp.MustCompile(`^out/` + regexp.QuoteMeta(g.name) + `\.slot-(\d+)/part-` + regexp.QuoteMeta(g.name) + `\.slot-(\d+)-\d{12,}-w\d+-\d+\.` + s.format + `$`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	perSlot := make([]int, g.slots)
	for obj := range s3test.Client(g.t, s.c).ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: "out/", Recursive: true}) {
		if obj.Err != nil {
			g.t.Fatalf("list %s/out/: %v", s.bucket, obj.Err)
		}
		if strings.HasPrefix(obj.Key, "out/_connector/") {
			continue // s3Leftovers' to report
		}
		m := re.FindStringSubmatch(obj.Key)
		if m == nil || m[1] != m[2] {
			g.t.Errorf("object %s is not named as an object of a slot's job", obj.Key)
			continue
		}
		if k, _ := strconv.Atoi(m[1]); k < g.slots {
			perSlot[k]++
		} else {
			g.t.Errorf("object %s is of slot %d of %d", obj.Key, k, g.slots)
		}
	}
	for k, n := range perSlot {
		if n == 0 {
			g.t.Errorf("no object of %s in the bucket", g.slotJob(k))
		}
	}
	g.t.Logf("after the final stop: %d uploads and deltas under out/; objects per slot %v", len(left), perSlot)
}
