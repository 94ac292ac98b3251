package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem with a config: where (file, line, key) and what.
// Line is that of the key, else of its closest parent in the file, else 1
// (a required top-level key left out); it is 0 for a Job built in code and
// for a few problems of the file as a whole (empty, too large). Key is ""
// for a problem of the file itself (YAML syntax).
type Error struct {
	File string // as given to Load or Parse
	Line int    // 1-based
	Key  string // dotted path: "checkpoint.interval", "pipeline.transforms[1].key"
	Msg  string
}

// Error formats the problem as "file:line: key: msg", leaving out the parts
// that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one config, ordered by line. Load and
// Parse return a non-empty Errors (never a nil Errors in a non-nil error);
// errors.As finds both Errors and each *Error in it.
type Errors []*Error

// Error writes one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// collector gathers problems, at most one per key: once a key has a problem
// (say it could not be decoded), later checks on it are noise. It keeps the
// first maxProblems and counts the rest.
type collector struct {
	src     *origin
	errs    Errors
	keys    map[string]bool // keys with a problem
	parents map[string]bool // proper parents of the keys with a problem
	dropped int             // problems beyond maxProblems
}

func newCollector(src *origin) *collector {
	return &collector{src: src, keys: map[string]bool{}, parents: map[string]bool{}}
}

// add records a problem with key at the key's line (origin.problemLine).
func (c *collector) add(key, format string, args ...any) {
	c.addAt(c.src.problemLine(key), key, format, args...)
}

func (c *collector) addAt(line int, key, format string, args ...any) {
	if last := c.src.last(); last > 0 {
		line = min(line, last)
	}
	if c.related(key) {
		return
	}
	if key != "" { // also past the cap: a related problem is not counted either
		c.keys[key] = true
		for p := parentKey(key); p != ""; p = parentKey(p) {
			c.parents[p] = true
		}
	}
	if len(c.errs) >= maxProblems {
		c.dropped++
		return
	}
	c.errs = append(c.errs, &Error{File: c.src.file(), Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// related reports whether key, one of its parents or one of its children
// already has a problem: "kafka.brokers: at least one broker is required"
// adds nothing to "kafka.brokers[0]: environment variable X is not set".
func (c *collector) related(key string) bool {
	if key == "" {
		return false
	}
	if c.parents[key] {
		return true
	}
	for k := key; k != ""; k = parentKey(k) {
		if c.keys[k] {
			return true
		}
	}
	return false
}

// err returns the problems ordered by line (stable: equal lines keep the
// order found), then a count of those beyond maxProblems; or nil.
func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(c.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	if c.dropped > 0 {
		return append(c.errs, &Error{File: c.src.file(), Msg: fmt.Sprintf("%d more problems not shown", c.dropped)})
	}
	return c.errs
}
