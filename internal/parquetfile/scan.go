package parquetfile

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
	return root
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

func (t *trie) lookup(key []byte) *trieEntry {
	for i := range t.entries {
		if t.entries[i].key == string(key) {
			return &t.entries[i]
		}
	}
	return nil
}

// scanner holds the raw value found for each column by the last scan.
type scanner struct {
	root *trie
	raw  [][]byte // raw JSON text per column; nil when absent
	key  []byte   // scratch for unescaped keys
}

func newScanner(cols []Column) *scanner {
	return &scanner{root: buildTrie(cols), raw: make([][]byte, len(cols))}
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
	clear(s.raw)
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
			e = t.lookup(key)
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, syntaxError(data, i, "want ':'")
		}
		i = skipSpace(data, i+1)
		start := i
		if e != nil && e.child != nil && i < len(data) && data[i] == '{' {
			i, err = s.object(data, i, e.child, depth+1)
		} else {
			i, err = s.value(data, i, depth+1)
		}
		if err != nil {
			return 0, err
		}
		if e != nil {
			for _, c := range e.cols {
				s.raw[c] = data[start:i]
			}
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

// scanString checks the string at data[i] ('"') and returns the index after
// its closing quote and whether it holds escapes. Its bytes must be UTF-8.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	start := i
	ascii := true
	for i++; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(data[start+1:i]) {
				return 0, false, fmt.Errorf("%w: offset %d: string is not UTF-8", ErrBadRecord, start)
			}
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(data) {
				return 0, false, syntaxError(data, i, "want an escape")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(data)-i <= 4 || !isHex4(data[i+1:i+5]) {
					return 0, false, syntaxError(data, i, `want \u and 4 hex digits`)
				}
				i += 4
			default:
				return 0, false, syntaxError(data, i, "want an escape")
			}
		case c < 0x20:
			return 0, false, syntaxError(data, i, "want no control character in a string")
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, false, syntaxError(data, i, `want '"'`)
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescape appends the content of a checked string (without its quotes) to
// dst. A lone surrogate becomes U+FFFD, as in encoding/json.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2 = utf16.DecodeRune(r, hex4(s[i+3:]))
				}
				if r2 != utf8.RuneError {
					i += 6
				}
				r = r2
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, s[i])
		}
	}
	return dst
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
