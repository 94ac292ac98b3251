package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestParquetRecordThatDoesNotFitTheColumns: among ids 0..499 written as
// Parquet to S3, id 137's amount is a string where the column is a double.
// It is a bad record, handled by pipeline.on_decode_error:
//
//   - fail: the job fails (exit status 1) with an error naming the column,
//     and no id is visible twice;
//   - skip: every other id is visible once (pyarrow reads the objects), id
//     137 is not, and connector_records_skipped_total counts it;
//   - dead_letter: every other id is visible once, and id 137 is on the
//     dead-letter topic as produced, with the error in its connector.error
//     header.
func TestParquetRecordThatDoesNotFitTheColumns(t *testing.T) {
	b := cluster(t)
	for _, policy := range []string{"fail", "skip", "dead_letter"} {
		t.Run(policy, func(t *testing.T) { parquetBadRecord(t, b, policy) })
	}
}

func parquetBadRecord(t *testing.T, b kafkatest.Brokers, policy string) {
	const (
		n     = 500
		bad   = 137
		value = `{"id":137,"ts":1,"customer":"c","amount":"a lot"}`
	)
	wantErr := []string{`column "amount"`}
	onError := map[string]any{"policy": policy}
	dlq := ""
	if policy == "dead_letter" {
		dlq = kafkatest.Topic(t, b, 1)
		onError["topic"] = dlq
	}
	spec := jobSpec{Parallelism: 2, Config: map[string]map[string]any{
		"pipeline": {"on_decode_error": onError},
		// One restart in process at most, then the process ends: a
		// failure shows at once.
		"restart": {"max_failures": 2, "initial_backoff": "100ms"},
	}}
	j, _, _ := s3Job(t, b, spec, "parquet")
	produceIDs(t, b, j.topic, 0, bad, false)
	produceValues(t, b, j.topic, &kgo.Record{Key: []byte(strconv.Itoa(bad)), Value: []byte(value)})
	produceIDs(t, b, j.topic, bad+1, n, false)

	p := j.start()
	if policy == "fail" {
		j.requireFailure(p, 2*time.Minute, wantErr...)
		out, err := j.out.readAll()
		if err != nil {
			t.Fatal(err)
		}
		tl := tallyOutput(out, n)
		t.Logf("after the failure %d of %d ids are visible", n-tl.missing, n)
		if tl.duplicates+tl.unexpected+tl.bad > 0 || out.counts[bad] > 0 {
			t.Errorf("after the failure: %s (id %d must not be there)", tl, bad)
		}
		return
	}
	j.waitForIDs(p, n, n-1, time.Minute) // every id but the bad one
	skipped, err := p.metric(metricSkipped)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	j.requireNoJobRestart(p)
	j.terminate(p, time.Minute)

	out, err := j.out.readAll()
	if err != nil {
		t.Fatal(err)
	}
	tl := tallyOutput(out, n)
	t.Logf("%s: %d of %d ids visible; duplicates=%d; %s=%v", policy, n-tl.missing, n, tl.duplicates, metricSkipped, skipped)
	if tl.duplicates+tl.unexpected+tl.bad > 0 || tl.missing != 1 || tl.missingIDs[0] != bad {
		t.Errorf("want every id but %d once: %s", bad, tl)
	}
	var why string
	switch policy {
	case "skip":
		if skipped != 1 {
			t.Errorf("%s = %v, want 1", metricSkipped, skipped)
		}
		if lines := logLines[errorLine](j, "skipping a record that cannot be processed", p); len(lines) > 0 {
			why = lines[0].Error
		}
	case "dead_letter":
		if skipped != 0 {
			t.Errorf("%s = %v, want 0 (dead-lettered, not skipped)", metricSkipped, skipped)
		}
		r := readDeadLetter(t, b, dlq, time.Minute)
		if string(r.Key) != strconv.Itoa(bad) || string(r.Value) != value {
			t.Errorf("dead letter %q = %s, want key %d and the value as produced, %s", r.Key, r.Value, bad, value)
		}
		for _, h := range r.Headers {
			if h.Key == "connector.error" {
				why = string(h.Value)
			}
		}
	}
	for _, w := range wantErr {
		if !strings.Contains(why, w) {
			t.Errorf("the %s record's error %q does not say %q", policy, why, w)
		}
	}
	t.Logf("%s of id %d: %s", policy, bad, why)
}
