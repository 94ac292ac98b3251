package transform

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/record"
)

func testChain(t *testing.T, kv KV) *Chain {
	t.Helper()
	c, err := Build([]Spec{
		{KindFilter, FilterConfig{Condition: Condition{Field: "status", Op: OpIn, Values: []any{"paid", "shipped"}}}},
		{KindProject, &ProjectConfig{Keep: []string{"id", "status", "amount"}, Rename: map[string]string{"amount": "total"}}},
		{KindDedup, DedupConfig{Key: "id", TTL: time.Hour}},
	}, kv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChainDecodesOnceAndEncodesOnce(t *testing.T) {
	c := testChain(t, NewMemKV())
	r := rec(`{"id":1,"status":"paid","amount":3,"junk":[1,2,3]}`)
	if !mustApply(t, c, r) {
		t.Fatal("dropped")
	}
	if want := `{"id":1,"status":"paid","total":3}`; string(r.Value) != want {
		t.Errorf("value = %s, want %s", r.Value, want)
	}
	if c.d.parses != 1 {
		t.Errorf("value parsed %d times by 3 transforms, want 1", c.d.parses)
	}
	if mustApply(t, c, rec(`{"id":1,"status":"shipped"}`)) {
		t.Error("duplicate id kept")
	}
	if mustApply(t, c, rec(`{"id":2,"status":"new"}`)) {
		t.Error("filtered status kept")
	}
	want := []Stats{
		{Name: "0:filter", In: 3, Dropped: 1},
		{Name: "1:project", In: 2},
		{Name: "2:dedup", In: 2, Dropped: 1},
	}
	if s := c.Stats()[0]; s.In != 0 {
		t.Errorf("before Publish: stats[0] = %+v, want nothing counted yet", s)
	}
	c.Publish()
	c.Publish() // again: nothing counted twice
	for i, s := range c.Stats() {
		if s != want[i] {
			t.Errorf("stats[%d] = %+v, want %+v", i, s, want[i])
		}
	}
}

// TestDedupByTheKeyByFieldReadsTheRuntimesMark: a dedup keyed by
// pipeline.key_by's field takes the key from where the runtime marked it
// (record.Record.KeyField) and decodes nothing; behind a filter too, but not
// behind a transform that may change the value.
func TestDedupByTheKeyByFieldReadsTheRuntimesMark(t *testing.T) {
	marked := func(v string) *record.Record {
		r := rec(v)
		i := strings.Index(v, `"u":`) + 4
		j := i + strings.IndexAny(v[i:], ",}")
		r.KeyField = record.Span{Start: int32(i), End: int32(j)}
		return r
	}
	dedup := Spec{KindDedup, DedupConfig{Key: "u", TTL: time.Hour}}
	filter := Spec{KindFilter, FilterConfig{Condition: Condition{Field: "u", Op: OpExists}}}
	project := Spec{KindProject, &ProjectConfig{Drop: []string{"x"}}}
	for _, c := range []struct {
		name   string
		specs  []Spec
		keyBy  string
		parses int // of the three records
	}{
		{"dedup by key_by", []Spec{dedup}, "u", 0},
		{"another key_by", []Spec{dedup}, "v", 3},
		{"behind a filter", []Spec{filter, dedup}, "u", 3}, // the filter decodes
		{"behind a project", []Spec{project, dedup}, "u", 3},
	} {
		ch, err := Build(c.specs, NewMemKV())
		if err != nil {
			t.Fatal(err)
		}
		ch.UseKeyField(c.keyBy)
		for i, want := range []bool{true, false, true} {
			v := []string{`{"u":"a","x":1}`, `{"x":2,"u":"a"}`, `{"u":"b"}`}[i]
			if got := mustApply(t, ch, marked(v)); got != want {
				t.Errorf("%s: record %d kept %v, want %v", c.name, i, got, want)
			}
		}
		if ch.d.parses != c.parses {
			t.Errorf("%s: %d values decoded, want %d", c.name, ch.d.parses, c.parses)
		}
		ded := ch.steps[len(ch.steps)-1].t.(*Dedup)
		if want := c.name == "dedup by key_by" || c.name == "behind a filter"; ded.useKeyField != want {
			t.Errorf("%s: the dedup reads the mark: %v, want %v", c.name, ded.useKeyField, want)
		}
	}
}

func TestChainLeavesAnUnchangedValueAlone(t *testing.T) {
	f, _ := NewFilter(Condition{Field: "a", Op: OpExists})
	p, _ := NewProject(ProjectConfig{Drop: []string{"zz"}})
	c := NewChain(f, p)
	r := rec(`{ "a" : 1 }`)
	orig := r.Value
	if !mustApply(t, c, r) || &r.Value[0] != &orig[0] {
		t.Errorf("value re-encoded although nothing changed: %s", r.Value)
	}
	empty := NewChain()
	r = rec(`not json at all`)
	if !mustApply(t, empty, r) {
		t.Error("an empty chain dropped a record")
	}
	if len(empty.Stats()) != 0 {
		t.Error("empty chain has stats")
	}
}

// upper is a Transform from outside the package: it sees the value as
// bytes.
type upper struct{ seen []string }

func (u *upper) Apply(r *record.Record) (bool, error) {
	u.seen = append(u.seen, string(r.Value))
	r.Value = []byte(strings.ReplaceAll(string(r.Value), `"x"`, `"X"`))
	return true, nil
}

func TestChainHandsForeignTransformsTheEncodedValue(t *testing.T) {
	p, _ := NewProject(ProjectConfig{Drop: []string{"drop"}})
	u := &upper{}
	f, _ := NewFilter(Condition{Field: "k", Op: OpEq, Value: "X"})
	c := NewChain(p, u, f)
	r := rec(`{"k":"x","drop":1}`)
	if !mustApply(t, c, r) {
		t.Fatal("the filter after the foreign transform did not see its change")
	}
	if u.seen[0] != `{"k":"x"}` || string(r.Value) != `{"k":"X"}` {
		t.Errorf("foreign saw %s, final %s", u.seen[0], r.Value)
	}
	if got := c.Stats()[1].Name; got != "1:custom" {
		t.Errorf("name = %q", got)
	}
}

func TestChainBadJSONIsErrDecodeWithTheOffsetAndTheValueUntouched(t *testing.T) {
	c := testChain(t, NewMemKV())
	for _, v := range []string{`[1,2]`, `{"status":"paid",}`, `"s"`, ``, `{"status":"paid"} x`} {
		r := rec(v)
		keep, err := c.Apply(r)
		var de *DecodeError
		if keep || !errors.Is(err, ErrDecode) || !errors.As(err, &de) {
			t.Fatalf("%q: keep=%v err=%v, want ErrDecode", v, keep, err)
		}
		if de.Offset != 42 || de.Partition != 3 || de.Topic != "orders" {
			t.Errorf("%q: error names %s[%d]@%d", v, de.Topic, de.Partition, de.Offset)
		}
		if !strings.Contains(err.Error(), "transform 0:filter:") || !strings.Contains(err.Error(), "orders[3]@42") {
			t.Errorf("message %q does not name the step and record", err)
		}
		if string(r.Value) != v {
			t.Errorf("value changed to %q", r.Value)
		}
	}
	c.Publish()
	if s := c.Stats()[0]; s.Errors != 5 || s.In != 5 {
		t.Errorf("stats = %+v, want 5 in, 5 errors", s)
	}
}

func TestBuildAndNewValidate(t *testing.T) {
	kv := NewMemKV()
	c, err := Build([]Spec{
		{KindDedup, DedupConfig{Key: "a", TTL: time.Second}},
		{KindDedup, &DedupConfig{Key: "b", TTL: time.Second}},
	}, kv)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, c, rec(`{"a":1,"b":1}`))
	if err := c.Flush(); err != nil { // both dedups', as before a snapshot
		t.Fatal(err)
	}
	for _, ns := range []string{"transform/dedup/0/\x00", "transform/dedup/1/\x00"} {
		if n := kv.count(ns, ""); n != 1 {
			t.Errorf("%d entries under %q, want 1", n, ns)
		}
	}
	bad := []struct {
		specs []Spec
		want  string
	}{
		{[]Spec{{KindDedup, DedupConfig{Name: "1", Key: "a", TTL: time.Second}}, {KindDedup, DedupConfig{Key: "a", TTL: time.Second}}},
			`transforms[1]: invalid transform config: dedup.name: "1" is also the name of transforms[0]`},
		{[]Spec{{KindDedup, FilterConfig{}}}, "transforms[0]: invalid transform config: type: dedup wants a DedupConfig, got transform.FilterConfig"},
		{[]Spec{{KindFilter, &FilterConfig{Condition: Condition{}}}}, "transforms[0]: invalid transform config: filter.condition.field: is required"},
		{[]Spec{{KindProject, ProjectConfig{}}}, "transforms[0]: invalid transform config: project: needs"},
		{[]Spec{{KindProject, FilterConfig{}}}, "type: project wants a transform.ProjectConfig, got transform.FilterConfig"},
		{[]Spec{{"map", nil}}, `type: "map" is not one of dedup, filter, project`},
	}
	for _, tc := range bad {
		_, err := Build(tc.specs, kv)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build = %v, want %q", err, tc.want)
		}
	}
	if _, err := New(KindDedup, &DedupConfig{Name: "x", Key: "a", TTL: time.Second}, kv); err != nil {
		t.Error(err)
	}
	if _, err := New(KindProject, &ProjectConfig{Keep: []string{"a"}}, nil); err != nil {
		t.Error(err)
	}
}

func TestFieldReaderReadsStringsDecodedAndOtherValuesAsJSON(t *testing.T) {
	f := NewFieldReader("a.b")
	for _, tc := range []struct{ value, want string }{
		{`{"a":{"b":"x\u0079"}}`, "xy"},
		{`{"a":{"b":12}}`, "12"},
		{`{"a":{"b":[1,2]}}`, "[1,2]"},
	} {
		got, found, err := f.Get(rec(tc.value))
		if err != nil || !found || string(got) != tc.want {
			t.Errorf("Get(%s) = %q, %v, %v; want %q", tc.value, got, found, err, tc.want)
		}
	}
	for _, v := range []string{`{"a":{}}`, `{"a":{"b":null}}`, `{"a":1}`} {
		if _, found, err := f.Get(rec(v)); found || err != nil {
			t.Errorf("Get(%s): found %v, %v; want absent", v, found, err)
		}
	}
	if _, _, err := f.Get(rec(`[1]`)); !errors.Is(err, ErrDecode) {
		t.Errorf("not an object: %v, want ErrDecode", err)
	}
}

// pipeline.key_by reads a field of every record: a string without escapes
// is read into the reader's buffer, not through a new string.
func TestFieldReaderReadsAPlainStringWithoutAllocating(t *testing.T) {
	f := NewFieldReader("u")
	r := rec(`{"u":"0b6a5c1e-7c2d-4f8e-9a1b-2c3d4e5f6a7b","n":1}`)
	var got []byte
	allocs := testing.AllocsPerRun(100, func() { got, _, _ = f.Get(r) })
	if string(got) != "0b6a5c1e-7c2d-4f8e-9a1b-2c3d4e5f6a7b" {
		t.Fatalf("Get = %q", got)
	}
	if allocs != 0 {
		t.Errorf("%v allocations a Get, want 0", allocs)
	}
}

func TestFieldsReaderReadsEveryPathWithOneParse(t *testing.T) {
	f := NewFieldsReader([]string{"id", "c.n", "gone", "z", "s"})
	r := rec(`{"id":7,"c":{"n":"x"},"z":null,"s":"a\"b"}`)
	got, err := f.Read(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"7", `"x"`, "", "null", `"a\"b"`}
	for i := range want {
		if string(got[i]) != want[i] || (want[i] == "") != (got[i] == nil) {
			t.Errorf("field %d = %q, want %q", i, got[i], want[i])
		}
	}
	if f.d.parses != 1 {
		t.Errorf("%d parses for 5 fields, want 1", f.d.parses)
	}
	if Unquote(got[4]) != `a"b` {
		t.Errorf("Unquote = %q", Unquote(got[4]))
	}
	if _, err := f.Read(rec(`nope`)); !errors.Is(err, ErrDecode) {
		t.Errorf("not JSON: %v, want ErrDecode", err)
	}
}
