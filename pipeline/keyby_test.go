package pipeline

import (
	"sync/atomic"
	"testing"

	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/record"
)

// TestKeyByKeysRecordsByTheFieldWhenTheValueHasIt: with pipeline.key_by, a
// record's key group is its field's (a string's content: "7" and 7 share
// one); a record without the field, or whose value is not JSON (the
// transforms apply the decode-error policy to it), goes by its Kafka key,
// and one without a key by its partition. Where the field was found is
// marked in the record (KeyField: its JSON text), for a dedup by the same
// field; elsewhere the mark is cleared.
func TestKeyByKeysRecordsByTheFieldWhenTheValueHasIt(t *testing.T) {
	const m = 128
	e := newEmitter(task{sourceTask, 0}, nil, nil, nil, m, "order.id", new(atomic.Uint64))
	stale := record.Span{Start: 1, End: 3}
	for _, c := range []struct {
		name  string
		r     record.Record
		want  int
		field string // the marked JSON text
	}{
		{"string field", record.Record{Key: []byte("k1"), Value: []byte(`{"order":{"id":"7\"x"}}`)}, keygroup.Of([]byte(`7"x`), m), `"7\"x"`},
		{"number field", record.Record{Key: []byte("k2"), Value: []byte(`{"a":[1],"order":{"b":2,"id":7}, "z":1}`)}, keygroup.Of([]byte("7"), m), `7`},
		{"missing field", record.Record{Key: []byte("k3"), Value: []byte(`{"order":{}}`), KeyField: stale}, keygroup.Of([]byte("k3"), m), ""},
		{"null field", record.Record{Key: []byte("k4"), Value: []byte(`{"order":{"id":null}}`), KeyField: stale}, keygroup.Of([]byte("k4"), m), ""},
		{"not JSON", record.Record{Key: []byte("k5"), Value: []byte(`7,k5`), KeyField: stale}, keygroup.Of([]byte("k5"), m), ""},
		{"no field, no key", record.Record{Partition: 131, Value: []byte(`{}`)}, 131 % m, ""},
	} {
		if got := e.keyGroupOf(&c.r); got != c.want {
			t.Errorf("%s: key group %d, want %d", c.name, got, c.want)
		}
		k := c.r.KeyField
		if got := string(c.r.Value[k.Start:k.End]); got != c.field || (c.field == "" && k != record.Span{}) {
			t.Errorf("%s: KeyField %+v marks %q, want %q", c.name, k, got, c.field)
		}
	}
	if plain := newEmitter(task{sourceTask, 0}, nil, nil, nil, m, "", new(atomic.Uint64)); plain.keyGroupOf(&record.Record{Key: []byte("k1"), Value: []byte(`{"order":{"id":"7"}}`)}) != keygroup.Of([]byte("k1"), m) {
		t.Errorf("without key_by, a record is not keyed by its Kafka key")
	}
}
