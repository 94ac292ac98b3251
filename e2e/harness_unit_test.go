package e2e

// Tests of the harness itself; no broker, no binary.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOutputReaderCountsOnlyVisibleFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "part-j-w0-1-0.jsonl", "{\"id\":0}\n{\"id\":1,\"x\":\"a\"}\n")
	writeFile(t, dir, "sub/part-j-w1-1-0.jsonl", "{\"id\":1}\n")
	writeFile(t, dir, ".pending.part-j-w0-2-0.jsonl", "{\"id\":2}\n")
	writeFile(t, dir, ".inprogress.part-j-w0-3.jsonl", "{\"id\":3}\n")
	writeFile(t, dir, "_tmp/part-j-w0-1-0.jsonl", "{\"id\":4}\n")
	writeFile(t, dir, "_SUCCESS", "")

	out, err := newOutputReader(dir).read()
	if err != nil {
		t.Fatal(err)
	}
	if out.files != 2 || out.lines != 3 || len(out.bad) != 0 {
		t.Fatalf("files=%d lines=%d bad=%v, want 2 files, 3 lines, none bad", out.files, out.lines, out.bad)
	}
	tl := tallyOutput(out, 3)
	if tl.duplicates != 1 || tl.missing != 1 || tl.unexpected != 0 || tl.ok() {
		t.Fatalf("tally %s, want one duplicate (id 1) and one missing (id 2)", tl)
	}
	if tl.dupIDs[0] != 1 || tl.missingIDs[0] != 2 {
		t.Fatalf("tally %s names the wrong ids", tl)
	}
}

func TestOutputReaderFlagsTornFilesAndLinesWithoutAnID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.jsonl", "{\"id\":0}\n{\"id\":1}")
	writeFile(t, dir, "b.jsonl", "{\"id\":2}\nnot json\n{\"name\":\"x\"}\n\n")
	out, err := newOutputReader(dir).read()
	if err != nil {
		t.Fatal(err)
	}
	if out.lines != 3 || len(out.bad) != 4 {
		t.Fatalf("lines=%d bad=%q, want 3 records and 4 problems (torn a, and 3 bad lines of b)", out.lines, out.bad)
	}
	if tl := tallyOutput(out, 3); tl.ok() || tl.bad != 4 || tl.missing != 0 {
		t.Fatalf("tally %s, want 4 bad and nothing missing", tl)
	}
}

func TestOutputReaderSeesNewAndRemovedFilesAfterCaching(t *testing.T) {
	dir := t.TempDir()
	r := newOutputReader(dir)
	writeFile(t, dir, "a.jsonl", "{\"id\":0}\n")
	if out, _ := r.read(); out.present(2) != 1 {
		t.Fatalf("present = %d, want 1", out.present(2))
	}
	writeFile(t, dir, "b.jsonl", "{\"id\":1}\n")
	if out, _ := r.read(); out.present(2) != 2 || out.files != 2 {
		t.Fatalf("present = %d files = %d, want 2 and 2", out.present(2), out.files)
	}
	if err := os.Remove(filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.jsonl", "{\"id\":1}\n{\"id\":5}\n") // rewritten: a new size
	out, _ := r.read()
	if out.files != 1 || out.lines != 2 || out.counts[0] != 0 || out.counts[5] != 1 {
		t.Fatalf("after removal and rewrite: files=%d lines=%d counts=%v", out.files, out.lines, out.counts)
	}
	if tl := tallyOutput(out, 2); tl.unexpected != 1 || tl.missing != 1 {
		t.Fatalf("tally %s, want id 5 unexpected and id 0 missing", tl)
	}
}

func TestOutputReaderOfAnEmptyDirectoryIsEmpty(t *testing.T) {
	out, err := newOutputReader(t.TempDir()).read()
	if err != nil || out.files != 0 || out.lines != 0 {
		t.Fatalf("read = %+v, %v; want nothing", out, err)
	}
	if tl := tallyOutput(out, 0); !tl.ok() {
		t.Fatalf("tally of nothing against nothing: %s", tl)
	}
}

func TestSumMetricAddsEverySeriesOfTheNameAndNoOther(t *testing.T) {
	text := strings.Join([]string{
		"# HELP connector_records_out_total Records written.",
		"# TYPE connector_records_out_total counter",
		`connector_records_out_total{sink="file",worker="0"} 10`,
		`connector_records_out_total{sink="fi}le \"q\"",worker="1"} 2.5 1700000000000`,
		"connector_records_out_total_created 1.7e9",
		"connector_records_out_totals 99",
		"connector_checkpoints_completed_total 3",
		"connector_checkpoint_duration_seconds_bucket{le=\"+Inf\"} 4",
		"",
	}, "\n")
	if v, ok := sumMetric(text, metricRecordsOut); !ok || v != 12.5 {
		t.Fatalf("%s = %v, %v; want 12.5, true", metricRecordsOut, v, ok)
	}
	if v, ok := sumMetric(text, metricCheckpoints); !ok || v != 3 {
		t.Fatalf("%s = %v, %v; want 3, true", metricCheckpoints, v, ok)
	}
	if _, ok := sumMetric(text, "connector_records_in_total"); ok {
		t.Fatalf("found a metric that is not there")
	}
}

func TestCheckpointOffsetsFoundInEveryShape(t *testing.T) {
	const topic = "orders-1"
	want := map[int32]int64{0: 12, 1: 40}
	shapes := map[string]string{
		"offsets object": `{"id":7,"source":{"orders-1":{"0":12,"1":40}}}`,
		"as shown, split over source tasks": `{"id":7,"timestamp":"2026-01-01T00:00:00Z","tasks":{` +
			`"source-0":{"data":{"orders-1":{"0":12}}},"source-1":{"data":{"orders-1":{"1":40}}},` +
			`"worker-0":{"data":{"committables":[{"checkpoint":7,"writer":0,"data":{"files":["part-x"]}}]}}}}`,
		"raw metadata, base64 data": `{"id":7,"timestamp":"2026-01-01T00:00:00Z","tasks":{` +
			`"source":{"data":"eyJvcmRlcnMtMSI6eyIwIjoxMiwiMSI6NDB9fQ=="},` +
			`"sink-0":{"data":"eyJmaWxlcyI6WyJwYXJ0LWEiXX0="}}}`,
		"entry list":  `{"id":7,"offsets":[{"topic":"orders-1","partition":0,"offset":12},{"topic":"orders-1","partition":1,"next_offset":40},{"topic":"other","partition":0,"offset":1}]}`,
		"text":        "checkpoint 7 (2026-01-01)\n  source: orders-1/0=12 orders-1/1=40\n",
		"same twice":  `{"source":{"orders-1":{"0":12,"1":40}},"committed":{"orders-1":{"0":12,"1":40}}}`,
		"json + text": `{"summary":"orders-1/0=12 orders-1/1=40","offsets":{"orders-1":{"0":12,"1":40}}}`,
		"with leader epochs": `{"id":7,"tasks":{"source-0":{"data":{"offsets":{"orders-1":{"0":12,"1":40}},` +
			`"epochs":{"orders-1":{"0":0,"1":3}},"topic_ids":{"orders-1":"e3jGeGa8R7S5eA6aJ7k5/w=="}}}}}`,
	}
	for name, out := range shapes {
		got, err := checkpointOffsets([]byte(out), topic)
		if err != nil || !equalOffsets(got, want) {
			t.Errorf("%s: got %v, %v; want %v", name, got, err, want)
		}
	}
	for name, out := range map[string]string{
		"ambiguous": `{"a":{"orders-1":{"0":12}},"b":{"orders-1":{"0":13}}}`,
		"none":      `{"id":7,"tasks":{}}`,
		"other":     "orders-10/0=5",
	} {
		if got, err := checkpointOffsets([]byte(out), topic); err == nil {
			t.Errorf("%s: got %v, want an error", name, got)
		}
	}
}

func TestRecordValuesAreSmallJSONWithTheirID(t *testing.T) {
	for _, id := range []int{0, 7, 199_999, 250_000} {
		for _, dup := range []bool{false, true} {
			v := recordValue(id, dup)
			if len(v) < 60 || len(v) > 100 {
				t.Errorf("id %d: %d bytes, want 60-100: %s", id, len(v), v)
			}
			dir := t.TempDir()
			writeFile(t, dir, "f.jsonl", string(v)+"\n")
			out, err := newOutputReader(dir).read()
			if err != nil || out.counts[int64(id)] != 1 || len(out.bad) != 0 {
				t.Errorf("id %d: read back %v, %v, bad %v", id, out.counts, err, out.bad)
			}
		}
	}
}

func TestCheckpointTxnsFoundInTheCommittablesOfCheckpointsShow(t *testing.T) {
	// The shape `connector checkpoints show` prints today, cut down: the
	// committables sit in each worker's snapshot data.
	out := []byte(`{"id": 3, "tasks": {"worker-1": {"data": {"committables": [
	  {"checkpoint": 3, "writer": 1, "data": {"txn": "job-w1-t0", "pid": 1111, "epoch": 1,
	    "ranges": [{"topic": "out", "partition": 0, "first": 342, "last": 506}], "records": 327}}]}},
	  "worker-0": {"data": {"committables": [
	  {"checkpoint": 2, "writer": 0, "data": {"txn": "job-w0-t1", "pid": 1110, "epoch": 4, "ranges": [], "records": 0}},
	  {"checkpoint": 3, "writer": 0, "data": {"txn": "job-w0-t0", "pid": 1112, "epoch": 1, "ranges": [], "records": 357}}]}}},
	  "offsets": {"data": {"txn": "not a committable: no pid"}}}`)
	refs, err := parseCheckpointTxns(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []txnRef{
		{Writer: 0, Checkpoint: 2, TxnID: "job-w0-t1", ProducerID: 1110, Epoch: 4},
		{Writer: 0, Checkpoint: 3, TxnID: "job-w0-t0", ProducerID: 1112, Epoch: 1},
		{Writer: 1, Checkpoint: 3, TxnID: "job-w1-t0", ProducerID: 1111, Epoch: 1},
	}
	if !slices.Equal(refs, want) {
		t.Fatalf("got %+v, want %+v", refs, want)
	}
}
