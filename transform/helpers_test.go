package transform

import (
	"errors"
	"testing"
	"time"

	"github.com/connector-dev/connector/record"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func rec(value string) *record.Record {
	return &record.Record{Topic: "orders", Partition: 3, Offset: 42, Timestamp: t0, Value: []byte(value)}
}

func recAt(value string, at time.Time) *record.Record {
	r := rec(value)
	r.Timestamp = at
	return r
}

// flushed flushes d, as the runtime does before a snapshot of its KV (a
// restart's state), and returns it.
func flushed(t *testing.T, d *Dedup) *Dedup {
	t.Helper()
	if err := d.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return d
}

// applied applies r to d, which must keep it, and returns d.
func applied(t *testing.T, d *Dedup, r *record.Record) *Dedup {
	t.Helper()
	if !mustApply(t, d, r) {
		t.Fatalf("Apply(%s) dropped a first sighting", r.Value)
	}
	return d
}

func mustApply(t *testing.T, tr Transform, r *record.Record) bool {
	t.Helper()
	keep, err := tr.Apply(r)
	if err != nil {
		t.Fatalf("Apply(%s): %v", r.Value, err)
	}
	return keep
}

var errDisk = errors.New("disk on fire")
