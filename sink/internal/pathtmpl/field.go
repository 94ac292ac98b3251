package pathtmpl

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// appendField appends the text of the field at path in the JSON value v
// (see the package documentation), or Missing.
func (e *Expander) appendField(out, v []byte, path []string) []byte {
	raw, ok := lookup(v, path)
	if !ok {
		return append(out, Missing...)
	}
	start := len(out)
	switch raw[0] {
	case '"':
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			var u string
			if json.Unmarshal(raw, &u) != nil {
				return append(out, Missing...)
			}
			e.str = append(e.str[:0], u...)
			s = e.str
		}
		for len(s) > 0 && len(out)-start < MaxValue {
			_, n := utf8.DecodeRune(s)
			if n == 1 && valueByte(s[0]) {
				out = append(out, s[0])
			} else {
				out = append(out, '_') // one for each character, or each byte not UTF-8
			}
			s = s[n:]
		}
	default: // a number, true or false: all of [0-9a-z.+-]
		for _, c := range raw[:min(len(raw), MaxValue)] {
			if !valueByte(c) {
				c = '_'
			}
			out = append(out, c)
		}
	}
	if len(out) == start || bytes.Contains(out[start:], []byte("..")) {
		return append(out[:start], Missing...)
	}
	return out
}

// lookup returns the raw JSON of the scalar at path in the object v (a
// string with its quotes, a number, true or false); false if v is not a
// JSON object, has no such field, or it is null, an object or an array.
// It reads v only as far as the field; the first of duplicate names wins.
func lookup(v []byte, path []string) ([]byte, bool) {
	i := 0
	for depth, name := range path {
		i = skipSpace(v, i)
		if i >= len(v) || v[i] != '{' {
			return nil, false
		}
		i++
		found := false
		for !found {
			i = skipSpace(v, i)
			if i >= len(v) || v[i] != '"' {
				return nil, false // '}' (no more fields) or not JSON
			}
			end, escaped := scanString(v, i)
			if end < 0 {
				return nil, false
			}
			key := v[i+1 : end-1]
			i = skipSpace(v, end)
			if i >= len(v) || v[i] != ':' {
				return nil, false
			}
			i = skipSpace(v, i+1)
			if keyIs(key, escaped, name) {
				found = true
				break
			}
			if i = skipValue(v, i); i < 0 {
				return nil, false
			}
			i = skipSpace(v, i)
			if i >= len(v) || v[i] != ',' {
				return nil, false
			}
			i++
		}
		if depth < len(path)-1 {
			continue // into the value, which must be an object
		}
		end := skipValue(v, i)
		if end < 0 {
			return nil, false
		}
		switch raw := v[i:end]; raw[0] {
		case '{', '[', 'n':
			return nil, false
		default:
			return raw, true
		}
	}
	return nil, false
}

// keyIs reports whether the raw JSON string contents key are name.
func keyIs(key []byte, escaped bool, name string) bool {
	if !escaped {
		return string(key) == name
	}
	var s string
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	return json.Unmarshal(q, &s) == nil && s == name
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the end (after the closing quote) of the string
// starting at v[i] == '"', and whether it holds escapes; -1 if unclosed.
func scanString(v []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// skipValue returns the end of the JSON value starting at v[i], -1 if
// there is none. Objects and arrays are skipped by their brackets (their
// content is not checked); numbers and literals by their characters.
func skipValue(v []byte, i int) int {
	if i >= len(v) {
		return -1
	}
	switch v[i] {
	case '"':
		end, _ := scanString(v, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(v); j++ {
			switch v[j] {
			case '"':
				end, _ := scanString(v, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(v) && scalarByte(v[j]) {
			j++
		}
		if j == i {
			return -1
		}
		lit := v[i:j]
		if string(lit) == "true" || string(lit) == "false" || string(lit) == "null" || v[i] == '-' || '0' <= v[i] && v[i] <= '9' {
			return j
		}
		return -1
	}
}

func scalarByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}
