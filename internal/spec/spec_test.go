package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type size int64

func (s *size) UnmarshalText(b []byte) error {
	n, ok := map[string]size{"1KiB": 1024, "2KiB": 2048}[string(b)]
	if !ok {
		return ErrInvalid
	}
	*s = n
	return nil
}

type inner struct {
	Every time.Duration `yaml:"every" default:"1s"`
	Delay time.Duration `yaml:"delay" default:"@every"`
	Buf   size          `yaml:"buf" default:"2KiB"`
}

func (i *inner) Validate(p *Problems) { Positive(p, "every", i.Every) }

type plug struct {
	Type string `yaml:"type"`
	Cfg  any    `yaml:",inline"`
}

type doc struct {
	Name   string   `yaml:"name"`
	Group  string   `yaml:"group" default:"@/name"`
	Count  int      `yaml:"count" default:"3"`
	On     bool     `yaml:"on" default:"true"`
	Inner  inner    `yaml:"inner"`
	Plug   plug     `yaml:"plug"`
	Items  []inner  `yaml:"items"`
	Hidden string   `yaml:"-" default:"x"`
	Words  []string `yaml:"words"`
	norm   int
}

func (d *doc) Normalize() { d.norm++ }

// TestFillAppliesLiteralsThenReferences: literal defaults fill zero,
// absent keys; '@key' copies a sibling and '@/key' a key from the root,
// after the literals; set keys and non-zero values are kept.
func TestFillAppliesLiteralsThenReferences(t *testing.T) {
	d := &doc{Name: "job", Count: 0, Plug: plug{Cfg: &inner{}}, Items: []inner{{}, {Every: time.Minute}}}
	set := func(key string) bool { return key == "count" }
	if err := Fill(d, "", set); err != nil {
		t.Fatal(err)
	}
	if d.Group != "job" || d.Count != 0 || !d.On || d.Hidden != "" {
		t.Errorf("top: %+v", d)
	}
	if d.Inner != (inner{Every: time.Second, Delay: time.Second, Buf: 2048}) {
		t.Errorf("inner: %+v", d.Inner)
	}
	if got := *d.Plug.Cfg.(*inner); got != (inner{Every: time.Second, Delay: time.Second, Buf: 2048}) {
		t.Errorf("an inline plugin's config: %+v", got)
	}
	if d.Items[1].Every != time.Minute || d.Items[1].Delay != time.Minute || d.Items[0].Every != time.Second {
		t.Errorf("list items: %+v", d.Items)
	}
	var keys []string
	for _, f := range Fields(d, "") {
		keys = append(keys, f.Key)
	}
	want := "name group count on inner inner.every inner.delay inner.buf plug plug.type plug.every plug.delay plug.buf items items[0].every items[0].delay items[0].buf items[1].every items[1].delay items[1].buf words"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys\n got %s\nwant %s", got, want)
	}
}

func TestFillRefusesAMalformedTag(t *testing.T) {
	type bad struct {
		N int `yaml:"n" default:"three"`
	}
	type badRef struct {
		N int `yaml:"n" default:"@nope"`
	}
	if err := Fill(&bad{}, "", nil); err == nil || !strings.Contains(err.Error(), "default of n") {
		t.Errorf("literal: %v", err)
	}
	if err := Fill(&badRef{}, "x", nil); err == nil || !strings.Contains(err.Error(), "default of x.n refers to") {
		t.Errorf("reference: %v", err)
	}
}

// TestValidateAllReportsEveryStructUnderItsKey: every Validator in the tree
// reports under its own path; the problems come in order.
func TestValidateAllReportsEveryStructUnderItsKey(t *testing.T) {
	d := &doc{Plug: plug{Cfg: &inner{}}, Items: []inner{{Every: 1}, {}}}
	var p Problems
	ValidateAll(d, "job", &p)
	want := "job.inner.every: must be positive, got 0s; job.plug.every: must be positive, got 0s; job.items[1].every: must be positive, got 0s"
	if got := p.String(); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), ErrInvalid.Error()) {
		t.Errorf("Err = %v", err)
	}
	NormalizeAll(d)
	if d.norm != 1 {
		t.Errorf("Normalize ran %d times", d.norm)
	}
	var none Problems
	if none.Err() != nil || len(none.List()) != 0 {
		t.Error("an empty collector reports something")
	}
}

func TestChecksSayTheKeyAndTheValue(t *testing.T) {
	var p Problems
	q := p.At("s")
	q.Required("a", "")
	q.AtLeast("b", 0, 1)
	q.Between("c", 9, 1, 5)
	NotNegative(q, "d", -time.Second)
	AtMost(q, "e", 7, 5)
	OneOf(q, "f", "mode", "x", "a", "b", "c")
	want := []string{
		"s.a: is required",
		"s.b: must be at least 1, got 0",
		"s.c: must be between 1 and 5, got 9",
		"s.d: must not be negative, got -1s",
		"s.e: must be at most 5, got 7",
		`s.f: unknown mode "x" (want a, b or c)`,
	}
	for i, pr := range p.List() {
		if pr.String() != want[i] {
			t.Errorf("%d: %s, want %s", i, pr, want[i])
		}
	}
	if len(p.List()) != len(want) {
		t.Errorf("%d problems, want %d", len(p.List()), len(want))
	}
}

// TestSetScalarReadsDecimalIntegers: integers are decimal; a leading zero
// ("010": octal to strconv's base 0, decimal to YAML 1.2) is refused as
// ErrLeadingZero, and base prefixes are not numbers.
func TestSetScalarReadsDecimalIntegers(t *testing.T) {
	var n int
	var u uint16
	for s, want := range map[string]int{"10": 10, "-7": -7, "+3": 3, "0": 0} {
		if err := SetScalar(reflect.ValueOf(&n).Elem(), s); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"010", "-010", "00"} {
		if err := SetScalar(reflect.ValueOf(&n).Elem(), s); !errors.Is(err, ErrLeadingZero) {
			t.Errorf("%q: %v, want ErrLeadingZero", s, err)
		}
	}
	if err := SetScalar(reflect.ValueOf(&u).Elem(), "010"); !errors.Is(err, ErrLeadingZero) {
		t.Errorf("uint 010: %v, want ErrLeadingZero", err)
	}
	for _, s := range []string{"0x10", "0o10", "1_000"} {
		if err := SetScalar(reflect.ValueOf(&n).Elem(), s); err == nil {
			t.Errorf("%q read as %d", s, n)
		}
	}
}

// TestFillMarksItsFillers: Fill calls MarkFilled on every Filler of the
// tree, so a component can tell a Config the config layer filled.
func TestFillMarksItsFillers(t *testing.T) {
	d := &filled{}
	if err := Fill(&struct {
		F *filled `yaml:"f"`
	}{F: d}, "", nil); err != nil {
		t.Fatal(err)
	}
	if !d.marked || d.N != 3 {
		t.Errorf("after Fill: %+v", *d)
	}
}

type filled struct {
	N      int `yaml:"n" default:"3"`
	marked bool
}

func (f *filled) MarkFilled() { f.marked = true }
