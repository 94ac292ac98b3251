package pathtmpl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/spec"
)

var at = time.Date(2026, 3, 7, 5, 9, 30, 0, time.UTC)

func expand(t *testing.T, src string, ts time.Time, v string) string {
	t.Helper()
	tm, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return string(tm.NewExpander().Expand(ts, []byte(v)))
}

func TestTimeTokensFormatTheRecordTimeInUTC(t *testing.T) {
	for src, want := range map[string]string{
		"dt={yyyy-MM-dd}/hour={HH}":  "dt=2026-03-07/hour=05",
		"{yyyy}/{MM}/{dd}":           "2026/03/07",
		"{yyyy/MM/dd}/{HH.mm}":       "2026/03/07/05.09",
		"ts={yyyyMMddHHmm}":          "ts=202603070509",
		"archive/":                   "archive",
		"y={yyyy}_m={MM}":            "y=2026_m=03",
		"dt={yyyy-MM-dd}/t={HH_mm}/": "dt=2026-03-07/t=05_09",
	} {
		if got := expand(t, src, at, ""); got != want {
			t.Errorf("%q: %q, want %q", src, got, want)
		}
	}
	// Another zone is the same instant: UTC decides.
	if got := expand(t, "{yyyy-MM-dd-HH}", at.In(time.FixedZone("x", 10*3600)), ""); got != "2026-03-07-05" {
		t.Errorf("a time in another zone: %q", got)
	}
}

func TestFieldsAreTheirTextSanitizedOrMissing(t *testing.T) {
	for v, want := range map[string]string{
		`{"c":"DE"}`:                     "c=DE",
		`{"c":42}`:                       "c=42",
		`{"c":-1.5e+3}`:                  "c=-1.5e_3",
		`{"c":true}`:                     "c=true",
		`{"c":"a b/c\\d"}`:               "c=a_b_c_d",
		`{"c":"Zürich"}`:                 "c=Z_rich",
		`{"c":"\u00e9t\u00e9"}`:          "c=_t_",
		`{"x":{"c":1},"c":"top"}`:        "c=top",
		`{"x":[1,{"c":"no"}],"c":"yes"}`: "c=yes",
		`{"x":"}\"","c":"q"}`:            "c=q",
		`{"c":"first","c":"second"}`:     "c=first",
		` { "c" : "spaced" } `:           "c=spaced",
		`{"c":null}`:                     "c=" + Missing,
		`{"c":{"d":1}}`:                  "c=" + Missing,
		`{"c":[1]}`:                      "c=" + Missing,
		`{"c":""}`:                       "c=" + Missing,
		`{"c":"a..b"}`:                   "c=" + Missing,
		`{"d":1}`:                        "c=" + Missing,
		`not json`:                       "c=" + Missing,
		`[{"c":1}]`:                      "c=" + Missing,
		``:                               "c=" + Missing,
		`{"c":"` + strings.Repeat("x", 300) + `"}`: "c=" + strings.Repeat("x", MaxValue),
	} {
		if got := expand(t, "c={field:c}", at, v); got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
	for v, want := range map[string]string{
		`{"user":{"address":{"country":"FR"}}}`:        "u=FR",
		`{"user":{"address":"FR"}}`:                    "u=" + Missing,
		`{"user":{"id":1,"address":{"country":"IT"}}}`: "u=IT",
		`{"user":{"address":{"country":"ES"}`:          "u=ES", // read only as far as the field
		`{"us\u0065r":{"address":{"country":"PT"}}}`:   "u=PT",
	} {
		if got := expand(t, "u={field:user.address.country}", at, v); got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
	if got := expand(t, "dt={yyyy-MM-dd}/c={field:c}/x{field:n}", at, `{"c":"DE","n":7}`); got != "dt=2026-03-07/c=DE/x7" {
		t.Errorf("mixed: %q", got)
	}
}

func TestParseRefusesWhatWouldNotBeAVisibleRelativeDirectory(t *testing.T) {
	for src, want := range map[string]string{
		"{yyyy-MM-dd":                  "not closed",
		"yyyy}":                        "closes no '{'",
		"{yy{yy}}":                     "inside braces",
		"{YYYY}":                       "unknown token {YYYY}",
		"{yyyy-MM-DD}":                 "unknown token",
		"{}":                           "empty token",
		"{--}":                         "unknown token",
		"{date}":                       "unknown token {date}",
		"{field:}":                     "empty name",
		"{field:a..b}":                 "empty name",
		"/abs/{HH}":                    "absolute",
		"a/../{HH}":                    "'..'",
		"a..b/{HH}":                    "'..'",
		"a//{HH}":                      "empty segment",
		".hidden/{HH}":                 "starts with '.'",
		"_tmp/{HH}":                    "starts with '_'",
		"x/{field:country}":            "starts with {field:",
		"part-{HH}":                    "part-",
		"a b/{HH}":                     "not allowed",
		"dt={yyyy}:{HH}":               "not allowed",
		"x{field:a}{field:b}{field:c}": "more than 255",
		"/":                            "only '/'",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", src, err, want)
		}
	}
	if tm, err := Parse(""); tm != nil || err != nil {
		t.Errorf(`Parse("") = %v, %v: want no template`, tm, err)
	}
}

func TestCheckNamesTheKey(t *testing.T) {
	var p spec.Problems
	Check(p.At("sink"), "path_template", "{HH")
	Check(p.At("sink"), "path_template", "dt={yyyy-MM-dd}")
	if got := p.String(); !strings.HasPrefix(got, `sink.path_template: "{HH": `) || len(p.List()) != 1 {
		t.Fatalf("problems %q", got)
	}
}

// TestEveryExpansionIsAValidDir: whatever the values, what a valid
// template expands to is a bucket ValidDir accepts (the sinks read buckets
// back from checkpoints with it).
func TestEveryExpansionIsAValidDir(t *testing.T) {
	values := []string{`{"a":"..","b":"."}`, `{"a":".x","b":"_y"}`, `{"a":"/","b":"\\"}`, `{}`, `{"a":"-","b":"="}`, `{"a":"` + strings.Repeat("é", 200) + `"}`}
	for _, src := range []string{"k={field:a}/v={field:b}", "{yyyy}/a{field:a}.{field:b}", "x-{field:a}{field:b}"} {
		tm, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		e := tm.NewExpander()
		for _, v := range values {
			if got := string(e.Expand(at, []byte(v))); !ValidDir(got) {
				t.Errorf("%q with %s: %q is not a valid dir", src, v, got)
			}
		}
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "..", "a/../b", ".x", "a/_b", "a b", "a\\b"} {
		if ValidDir(bad) {
			t.Errorf("ValidDir(%q) = true", bad)
		}
	}
}

// TestTheTimeBucketIsFormattedOncePerBoundary: records within the cached
// hour reuse its text; crossing a boundary either way re-formats.
func TestTheTimeBucketIsFormattedOncePerBoundary(t *testing.T) {
	tm, _ := Parse("dt={yyyy-MM-dd}/hour={HH}")
	e := tm.NewExpander()
	first := e.Expand(at, nil)
	if string(first) != "dt=2026-03-07/hour=05" {
		t.Fatal(string(first))
	}
	lo, hi := e.lo, e.hi
	if hi-lo != 3600 || lo != time.Date(2026, 3, 7, 5, 0, 0, 0, time.UTC).Unix() {
		t.Fatalf("cached [%d, %d), want the hour", lo, hi)
	}
	for _, d := range []time.Duration{0, 50 * time.Minute, -9 * time.Minute} {
		if got := string(e.Expand(at.Add(d), nil)); got != "dt=2026-03-07/hour=05" {
			t.Errorf("+%v: %q", d, got)
		}
	}
	if got := string(e.Expand(at.Add(51*time.Minute), nil)); got != "dt=2026-03-07/hour=06" {
		t.Errorf("next hour: %q", got)
	}
	if got := string(e.Expand(at.Add(-19*time.Hour), nil)); got != "dt=2026-03-06/hour=10" {
		t.Errorf("the day before: %q", got)
	}
	allocs := testing.AllocsPerRun(100, func() { e.Expand(at.Add(-19*time.Hour), nil) })
	if allocs != 0 {
		t.Errorf("%v allocations per cached expansion", allocs)
	}
}

func TestMonthAndYearBucketsSpanTheirWholeUnit(t *testing.T) {
	tm, _ := Parse("{yyyy-MM}")
	e := tm.NewExpander()
	for d, want := range map[int]string{1: "2026-01", 31: "2026-01", 32: "2026-02", 365: "2026-12", 366: "2027-01"} {
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d-1)
		if got := string(e.Expand(ts, nil)); got != want {
			t.Errorf("day %d: %q, want %q", d, got, want)
		}
	}
}

func BenchmarkExpand(b *testing.B) {
	v := []byte(`{"id":123456,"user":{"name":"someone","country":"DE"},"amount":12.5,"note":"` + strings.Repeat("x", 200) + `"}`)
	for _, src := range []string{"dt={yyyy-MM-dd}/hour={HH}", "dt={yyyy-MM-dd}/country={field:user.country}", "amount={field:amount}"} {
		b.Run(src, func(b *testing.B) {
			tm, err := Parse(src)
			if err != nil {
				b.Fatal(err)
			}
			e := tm.NewExpander()
			ts := at
			b.ReportAllocs()
			for i := range b.N {
				e.Expand(ts.Add(time.Duration(i%1000)*time.Millisecond), v)
			}
		})
	}
	b.Run("hour boundary every record", func(b *testing.B) {
		tm, _ := Parse("dt={yyyy-MM-dd}/hour={HH}")
		e := tm.NewExpander()
		b.ReportAllocs()
		for i := range b.N {
			e.Expand(at.Add(time.Duration(i%2)*time.Hour), v)
		}
	})
}

func ExampleExpander_Expand() {
	tm, _ := Parse("dt={yyyy-MM-dd}/hour={HH}/country={field:user.country}")
	e := tm.NewExpander()
	fmt.Println(string(e.Expand(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), []byte(`{"user":{"country":"NL"}}`))))
	fmt.Println(string(e.Expand(time.Date(2026, 1, 2, 15, 59, 0, 0, time.UTC), []byte(`{"user":{}}`))))
	// Output:
	// dt=2026-01-02/hour=15/country=NL
	// dt=2026-01-02/hour=15/country=__missing__
}
