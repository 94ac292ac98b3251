package metrics

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exposition is WritePrometheus's output, parsed line by line.
type exposition struct {
	help    map[string]string  // family name -> HELP text, as escaped
	types   map[string]string  // family name -> TYPE
	samples map[string]float64 // `name{labels}` as written -> value
	order   []string           // sample keys in output order
	lines   []string
}

var (
	commentLine = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
	sampleLine  = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$`)
)

// scrape renders r and parses it, failing the test on any line that is not
// valid text format 0.0.4, or a sample whose family has no TYPE line yet.
func scrape(t *testing.T, r *Registry) exposition {
	t.Helper()
	var b strings.Builder
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	e := exposition{help: map[string]string{}, types: map[string]string{}, samples: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		line := sc.Text()
		e.lines = append(e.lines, line)
		if m := commentLine.FindStringSubmatch(line); m != nil {
			if m[1] == "HELP" {
				e.help[m[2]] = m[3]
			} else {
				e.types[m[2]] = m[3]
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a valid exposition line: %q\n%s", line, b.String())
		}
		if _, ok := e.types[familyOf(m[1], e.types)]; !ok {
			t.Fatalf("sample %q before its TYPE line", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("line %q: value: %v", line, err)
		}
		key := m[1] + m[2]
		if _, dup := e.samples[key]; dup {
			t.Fatalf("sample %s written twice", key)
		}
		e.samples[key] = v
		e.order = append(e.order, key)
	}
	return e
}

// familyOf maps a histogram's _bucket/_sum/_count sample name to its family.
func familyOf(name string, types map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && types[base] == "histogram" {
			return base
		}
	}
	return name
}

func (e exposition) value(t *testing.T, key string) float64 {
	t.Helper()
	v, ok := e.samples[key]
	if !ok {
		t.Fatalf("no sample %s in\n%s", key, strings.Join(e.lines, "\n"))
	}
	return v
}

func (e exposition) String() string { return strings.Join(e.lines, "\n") }
