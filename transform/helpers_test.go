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

func mustApply(t *testing.T, tr Transform, r *record.Record) bool {
	t.Helper()
	keep, err := tr.Apply(r)
	if err != nil {
		t.Fatalf("Apply(%s): %v", r.Value, err)
	}
	return keep
}

// failKV is a KV whose every read and write fails; expiring succeeds (it
// holds nothing to free), so that a dedup's first call to fail is Get.
type failKV struct{}

var errDisk = errors.New("disk on fire")

func (failKV) Get([]byte) ([]byte, bool, error) { return nil, false, errDisk }
func (failKV) Set([]byte, []byte) error         { return errDisk }
func (failKV) Delete([]byte) error              { return errDisk }
func (failKV) Expire([]byte, []byte) error      { return nil }
func (failKV) Scan([]byte, []byte, func(key, value []byte) error) error {
	return nil
}
