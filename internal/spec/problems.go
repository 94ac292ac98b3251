package spec

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one thing wrong with a config: the dotted key it is about
// (relative to the struct that was validated, "" for the struct itself)
// and what is wrong.
type Problem struct {
	Key string
	Msg string
}

// Problems collects every problem found while validating a config, instead
// of stopping at the first. The zero value is ready to use. Not safe for
// concurrent use.
type Problems struct {
	list   *[]Problem
	prefix string
}

// Validator is implemented by config structs that check themselves. Validate
// reports each problem to p, under the field's YAML key; it is called after
// the defaults were filled.
type Validator interface {
	Validate(p *Problems)
}

func (p *Problems) ensure() {
	if p.list == nil {
		p.list = new([]Problem)
	}
}

// Add reports a problem with key (relative to this collector's prefix; ""
// is the prefix itself).
func (p *Problems) Add(key, format string, args ...any) {
	p.ensure()
	*p.list = append(*p.list, Problem{Key: Join(p.prefix, key), Msg: fmt.Sprintf(format, args...)})
}

// At returns a collector that reports into the same list, with keys under
// key: p.At("sink").Add("path", ...) reports "sink.path".
func (p *Problems) At(key string) *Problems {
	p.ensure()
	return &Problems{list: p.list, prefix: Join(p.prefix, key)}
}

// List returns the problems in the order they were reported.
func (p *Problems) List() []Problem {
	if p.list == nil {
		return nil
	}
	return *p.list
}

// Err returns nil if nothing was reported, else an error listing every
// problem (see String), wrapping ErrInvalid.
func (p *Problems) Err() error {
	if len(p.List()) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, p)
}

// String lists every problem as "key: msg", separated by "; ".
func (p *Problems) String() string {
	list := p.List()
	lines := make([]string, len(list))
	for i, pr := range list {
		lines[i] = pr.String()
	}
	return strings.Join(lines, "; ")
}

// String is "key: msg", or msg alone for the struct itself.
func (pr Problem) String() string {
	if pr.Key == "" {
		return pr.Msg
	}
	return pr.Key + ": " + pr.Msg
}

// ErrInvalid classes the error of Problems.Err and of Check.
var ErrInvalid = errors.New("invalid config")

// Check validates v (if it is a Validator) into a fresh collector and returns
// Problems.Err: for components built in code.
func Check(v any) error {
	var p Problems
	if val, ok := v.(Validator); ok {
		val.Validate(&p)
	}
	return p.Err()
}

// Join appends key to a dotted path: Join("sink", "path") is "sink.path";
// an index ("[2]") is appended without a dot.
func Join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	case strings.HasPrefix(key, "["):
		return path + key
	}
	return path + "." + key
}
