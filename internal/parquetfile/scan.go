package parquetfile

import (
	"fmt"
	"strings"
)

// A single pass over a JSON record value: it checks the syntax of the whole
// value and records, for each column, the raw text of the value at the
// column's path. Values on no column's path are skipped without decoding.

// maxDepth bounds the nesting of a record value.
const maxDepth = 256

// trie maps the keys of one JSON object to columns and to nested tries.
type trie struct {
	entries []trieEntry
}

type trieEntry struct {
	key   string
	cols  []int // columns whose path ends at this key
	child *trie // paths that continue below this key
	under []int // the columns of child, at every depth
	// seen is the full scan (scanner.scans) that last met the key, so a
	// trie belongs to one scanner. A key met again in the same scan is
	// repeated, and its last value counts: the columns under it lose what
	// the earlier value set (those of cols are simply set again). A key
	// met once costs no clear.
	seen uint64
}

func buildTrie(cols []Column) *trie {
	root := &trie{}
	for i, c := range cols {
		t := root
		segs := strings.Split(c.path(), ".")
		for j, seg := range segs {
			e := t.entry(seg)
			if j == len(segs)-1 {
				e.cols = append(e.cols, i)
				break
			}
			if e.child == nil {
				e.child = &trie{}
			}
			t = e.child
		}
	}
	root.collect()
	return root
}

// collect sets the under list of t's entries and returns every column of t.
func (t *trie) collect() []int {
	var all []int
	for i := range t.entries {
		e := &t.entries[i]
		if e.child != nil {
			e.under = e.child.collect()
		}
		all = append(all, e.cols...)
		all = append(all, e.under...)
	}
	return all
}

func (t *trie) entry(key string) *trieEntry {
	for i := range t.entries {
		if t.entries[i].key == key {
			return &t.entries[i]
		}
	}
	t.entries = append(t.entries, trieEntry{key: key})
	return &t.entries[len(t.entries)-1]
}

// lookup finds key, trying first the entry after the one found last:
// the records of a topic mostly have their keys in one order.
func (t *trie) lookup(key []byte, next *int) *trieEntry {
	if n := *next; n < len(t.entries) && t.entries[n].key == string(key) {
		*next = n + 1
		return &t.entries[n]
	}
	for i := range t.entries {
		if t.entries[i].key == string(key) {
			*next = i + 1
			return &t.entries[i]
		}
	}
	return nil
}

// scanner holds the raw value found for each column by the last scan.
type scanner struct {
	root    *trie
	raw     [][]byte // raw JSON text per column; nil when absent
	escaped []bool   // per column: raw is a string with escapes
	key     []byte   // scratch for unescaped keys
	slots   []slot   // the top-level values of the record being scanned
	shape   shape    // the layout of the last record
	scans   uint64   // full scans begun, this one included
}

func newScanner(cols []Column) *scanner {
	return &scanner{root: buildTrie(cols), raw: make([][]byte, len(cols)), escaped: make([]bool, len(cols))}
}

// syntaxError is a bad record: the value is not the JSON the scanner expects.
func syntaxError(data []byte, i int, what string) error {
	if i >= len(data) {
		return fmt.Errorf("%w: %s, got end of value", ErrBadRecord, what)
	}
	return fmt.Errorf("%w: offset %d: %s, got %q", ErrBadRecord, i, what, data[i])
}

// scan checks that data is one JSON object and fills s.raw.
func (s *scanner) scan(data []byte) error {
	if s.shape.ok && s.scanShape(data) {
		return nil
	}
	clear(s.raw)
	s.slots = s.slots[:0]
	s.scans++
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return syntaxError(data, i, "want a JSON object")
	}
	i, err := s.object(data, i, s.root, 1)
	if err != nil {
		return err
	}
	if i = skipSpace(data, i); i != len(data) {
		return syntaxError(data, i, "want end of value after the object")
	}
	s.learn(data)
	return nil
}

// object scans the object at data[i] ('{') with the keys of t (nil: skip
// everything) and returns the index after its '}'.
func (s *scanner) object(data []byte, i int, t *trie, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested deeper than %d", ErrBadRecord, maxDepth)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	next := 0 // the trie entry expected next
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, syntaxError(data, i, "want a key")
		}
		end, escaped, err := scanString(data, i)
		if err != nil {
			return 0, err
		}
		var e *trieEntry
		if t != nil {
			key := data[i+1 : end-1]
			if escaped {
				s.key = unescape(s.key[:0], key)
				key = s.key
			}
			e = t.lookup(key, &next)
		}
		if e != nil && e.child != nil {
			if e.seen == s.scans { // a repeated key: its last value counts, whatever it is
				for _, c := range e.under {
					s.raw[c] = nil
				}
			}
			e.seen = s.scans
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, syntaxError(data, i, "want ':'")
		}
		i = skipSpace(data, i+1)
		start := i
		escaped = false
		switch {
		case i < len(data) && data[i] == '"': // most values: no call of value
			i, escaped, err = scanString(data, i)
		case e != nil && e.child != nil && i < len(data) && data[i] == '{':
			i, err = s.object(data, i, e.child, depth+1)
		default:
			i, err = s.value(data, i, depth+1)
		}
		if err != nil {
			return 0, err
		}
		if e != nil {
			for _, c := range e.cols {
				s.raw[c], s.escaped[c] = data[start:i], escaped
			}
		}
		if depth == 1 {
			s.slots = append(s.slots, slot{start, i, e})
		}
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return i + 1, nil
		}
		return 0, syntaxError(data, i, "want ',' or '}'")
	}
}

// value checks the value at data[i] and returns the index after it.
func (s *scanner) value(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return 0, syntaxError(data, i, "want a value")
	}
	switch c := data[i]; {
	case c == '"':
		end, _, err := scanString(data, i)
		return end, err
	case c == '{':
		return s.object(data, i, nil, depth)
	case c == '[':
		return s.array(data, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	}
	return 0, syntaxError(data, i, "want a value")
}

func (s *scanner) array(data []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested deeper than %d", ErrBadRecord, maxDepth)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = s.value(data, i, depth+1); err != nil {
			return 0, err
		}
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			return i + 1, nil
		}
		return 0, syntaxError(data, i, "want ',' or ']'")
	}
}

func skipSpace(data []byte, i int) int {
	if i < len(data) && data[i] > ' ' { // no space: most records
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func literal(data []byte, i int, lit string) (int, error) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, syntaxError(data, i, "want "+lit)
	}
	return i + len(lit), nil
}

// scanNumber checks the number at data[i] against the JSON grammar and
// returns the index after it.
func scanNumber(data []byte, i int) (int, error) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(data, i)
	default:
		return 0, syntaxError(data, i, "want a digit")
	}
	if i < len(data) && data[i] == '.' {
		if j := digits(data, i+1); j > i+1 {
			i = j
		} else {
			return 0, syntaxError(data, i+1, "want a digit")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if j := digits(data, i); j > i {
			i = j
		} else {
			return 0, syntaxError(data, i, "want a digit")
		}
	}
	return i, nil
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}
