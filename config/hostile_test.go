package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
)

// Files a hostile (or unlucky) operator may write. FuzzParse starts from
// these too.
var (
	// selfAnchor is a condition that contains itself: decoded naively, it
	// recurses until memory runs out.
	selfAnchor = with(
		"pipeline:",
		"  transforms:",
		"    - type: filter",
		"      condition: &c {all: [*c]}",
	)
	// aliasBomb is billion laughs in 820 bytes: each anchor is a list of
	// nine aliases of the previous one, 4·9⁸ conditions once expanded.
	aliasBomb = with(
		"pipeline:",
		"  transforms:",
		"    - type: filter",
		"      condition:",
		"        any:",
		"          - &a {any: [{field: x, op: exists}, {field: y, op: exists}, {field: z, op: exists}, {field: w, op: exists}]}",
		"          - &b {any: [*a, *a, *a, *a, *a, *a, *a, *a, *a]}",
		"          - &c {any: [*b, *b, *b, *b, *b, *b, *b, *b, *b]}",
		"          - &d {any: [*c, *c, *c, *c, *c, *c, *c, *c, *c]}",
		"          - &e {any: [*d, *d, *d, *d, *d, *d, *d, *d, *d]}",
		"          - &f {any: [*e, *e, *e, *e, *e, *e, *e, *e, *e]}",
		"          - &g {any: [*f, *f, *f, *f, *f, *f, *f, *f, *f]}",
		"          - &h {any: [*g, *g, *g, *g, *g, *g, *g, *g, *g]}",
		"          - &i {any: [*h, *h, *h, *h, *h, *h, *h, *h, *h]}",
	)
	// listBomb is the classic shape, lists of aliases of lists, under a key
	// the decoder does not even read.
	listBomb = with(
		"x-lol:",
		`  - &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`,
		"  - &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
		"  - &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
		"  - &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
		"  - &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
		"  - &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
		"  - &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
		"  - &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
		"  - &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]",
	)
)

// deepCondition nests n all: conditions, one per line, starting at line 8.
func deepCondition(n int) []byte {
	lines := []string{"pipeline:", "  transforms:", "    - type: filter", "      condition:"}
	indent := "        "
	for range n {
		lines = append(lines, indent+"all:", indent+"  -")
		indent += "    "
	}
	lines = append(lines, indent+"{field: x, op: exists}")
	return with(lines...)
}

// parseQuickly parses data and fails the test if that takes more than a
// few seconds (it takes milliseconds; the limit leaves room for the race
// detector and a loaded machine).
func parseQuickly(t *testing.T, data []byte) error {
	t.Helper()
	const limit = 3 * time.Second
	start := time.Now()
	_, err := config.Parse("config.yaml", data, env(nil))
	d := time.Since(start)
	if d >= limit {
		t.Errorf("Parse took %v, want less than %v", d, limit)
	}
	t.Logf("Parse took %v", d)
	return err
}

// TestAliasesAndNestingAreBoundedWithFileAndLine: an anchor that contains
// itself, alias bombs and absurd nesting are refused at once, at the line
// of the alias (or the node) that crosses the limit, instead of recursing
// until the process runs out of memory.
func TestAliasesAndNestingAreBoundedWithFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml []byte
		want string
	}{
		{"self-referencing anchor", selfAnchor,
			"config.yaml:8: pipeline.transforms[0].condition.all[0]: alias *c refers to a value that contains it (&c on line 8)"},
		{"alias bomb of conditions", aliasBomb,
			"config.yaml:14: pipeline.transforms[0].condition.any[4].any[1]: aliases expand the file to more than 50000 values; refusing it"},
		{"alias bomb of lists", listBomb,
			"config.yaml:10: x-lol[4][5]: aliases expand the file to more than 50000 values; refusing it"},
		{"nesting deeper than 100", deepCondition(60),
			"config.yaml:105: pipeline: nested more than 100 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseQuickly(t, tc.yaml)
			var errs config.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want config.Errors", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("wrong message\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
	// Forty levels of conditions are a lot, and fine.
	if err := parseQuickly(t, deepCondition(40)); err != nil {
		t.Errorf("40 nested conditions: %v", err)
	}
}

// TestAnAliasUsedManyTimesIsFine: aliases are for sharing, and sharing a
// condition a few times is what they are for.
func TestAnAliasUsedManyTimesIsFine(t *testing.T) {
	j := mustParse(t, with(
		"pipeline:",
		"  transforms:",
		"    - {type: filter, condition: &paid {field: status, op: eq, value: paid}}",
		"    - {type: filter, condition: {any: [*paid, *paid, {field: id, op: exists}]}}",
	), nil)
	if c := filter(j, 1).Condition.Any[1]; c.Field != "status" || c.Value != "paid" {
		t.Errorf("the alias decoded to %+v", c)
	}
}

// TestTooManyProblemsAreCutShort: a file whose aliases repeat a mistake
// a thousand times gets the first hundred problems and a count of the
// rest, quickly.
func TestTooManyProblemsAreCutShort(t *testing.T) {
	data := with(
		"pipeline:",
		"  transforms:",
		"    - type: filter",
		"      condition:",
		"        any:",
		"          - &a {any: [{bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}, {bad: 1}]}",
		"          - &b {any: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}",
		"          - {any: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}",
	)
	err := parseQuickly(t, data)
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v, want config.Errors", err)
	}
	if len(errs) != 101 {
		t.Fatalf("%d problems reported, want 100 and a count of the rest:\n%v", len(errs), err)
	}
	want := "config.yaml:10: pipeline.transforms[0].condition.any[0].any[0].bad: unknown key"
	if first := errs[0].Error(); first != want {
		t.Errorf("first problem: %s\nwant %s", first, want)
	}
	if last := errs[100].Error(); last != "config.yaml: 1011 more problems not shown" {
		t.Errorf("last problem: %s", last)
	}
}

// TestOversizedFileIsRefused: no job needs a megabyte of YAML; a larger
// file is refused before it is parsed.
func TestOversizedFileIsRefused(t *testing.T) {
	data := append(with(), []byte("# "+strings.Repeat("x", 1<<20)+"\n")...)
	_, err := config.Parse("config.yaml", data, env(nil))
	want := fmt.Sprintf("config.yaml: the file is %d bytes; a job file may have at most 1048576", len(data))
	if err == nil || err.Error() != want {
		t.Errorf("Parse = %v\nwant %s", err, want)
	}
}
