package transform

import (
	"encoding/binary"
	"math/bits"
)

// A small, allocation-free JSON scanner. It validates the grammar of RFC 8259
// (it does not check that strings are valid UTF-8; bytes are passed through)
// and reports where a value starts and ends, so transforms can compare and
// copy raw bytes instead of building Go values.

// maxDepth bounds nesting so a hostile value cannot exhaust the stack.
const maxDepth = 512

// syntaxError is a scanner failure: what is wrong, at which byte.
type syntaxError struct {
	pos int
	msg string
}

// strPlain is true for bytes that may appear in a string as they are.
var strPlain [256]bool

func init() {
	for c := 0x20; c < 256; c++ {
		strPlain[c] = c != '"' && c != '\\'
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString scans the string starting at b[i] == '"'. It returns the index
// after the closing quote and whether the string holds escapes.
func scanString(b []byte, i int) (end int, esc bool, err *syntaxError) {
	i++
	for {
		// Eight bytes at a time while none is special (SWAR), then byte
		// by byte from the first one that may be.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			m := hasZeroByte(x^(lsb*'"')) | hasZeroByte(x^(lsb*'\\')) | (x-lsb*0x20)&^x&msb
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, &syntaxError{i, "unterminated string"}
		}
		switch b[i] {
		case '"':
			return i + 1, esc, nil
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, &syntaxError{i, "unterminated string"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, esc, &syntaxError{i, `bad \u escape in string`}
				}
				i += 6
			default:
				return i, esc, &syntaxError{i, "bad escape in string"}
			}
		default:
			return i, esc, &syntaxError{i, "control character in string"}
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZeroByte flags a zero byte of x: the lowest flagged byte is exact
// (higher ones may be false positives, which the byte loop then rejects).
func hasZeroByte(x uint64) uint64 { return (x - lsb) &^ x & msb }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipValue scans the value starting at b[i] (no leading space) and returns
// the index after it.
func skipValue(b []byte, i, depth int) (int, *syntaxError) {
	if i >= len(b) {
		return i, &syntaxError{i, "unexpected end of value"}
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		return skipObject(b, i, depth+1)
	case c == '[':
		return skipArray(b, i, depth+1)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || isDigit(c):
		return scanNumber(b, i)
	default:
		return i, &syntaxError{i, "unexpected character looking for a value"}
	}
}

func literal(b []byte, i int, lit string) (int, *syntaxError) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, &syntaxError{i, "bad literal, want " + lit}
	}
	return i + len(lit), nil
}

// scanNumber follows JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, *syntaxError) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return start, &syntaxError{i, "bad number"}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return start, &syntaxError{i, "bad number: no digit after '.'"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return start, &syntaxError{i, "bad number: no digit in exponent"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func skipArray(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return i, &syntaxError{i, "nested too deeply"}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err *syntaxError
		if i, err = skipValue(b, i, depth); err != nil {
			return i, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, &syntaxError{i, "unterminated array"}
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, &syntaxError{i, "want ',' or ']' in array"}
		}
	}
}

// member is one "key": value pair of an object, as byte spans.
type member struct {
	k0, k1 int // key without its quotes: b[k0:k1]
	v0, v1 int // value: b[v0:v1]
	esc    bool
}

// named says whether m, a member of b, has the key name: its text, with
// any escapes decoded.
func (m *member) named(b []byte, name string) bool {
	if !m.esc {
		return string(b[m.k0:m.k1]) == name
	}
	return unquote(b[m.k0-1:m.k1+1]) == name
}

// nextMember scans the member starting at b[i] == '"' into m and returns
// the index after it and after any space and the following ',' or '}'
// (done reports the '}'). m is filled in place: returned, the 40-byte
// member was a copy out and another into the caller's list, a quarter of a
// document's scan.
func nextMember(b []byte, i, depth int, m *member) (next int, done bool, err *syntaxError) {
	if i >= len(b) || b[i] != '"' {
		return i, false, &syntaxError{i, "want a string key in object"}
	}
	m.k0 = i + 1
	if i, m.esc, err = scanString(b, i); err != nil {
		return i, false, err
	}
	m.k1 = i - 1
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false, &syntaxError{i, "want ':' after object key"}
	}
	i = skipWS(b, i+1)
	m.v0 = i
	if i, err = skipValue(b, i, depth); err != nil {
		return i, false, err
	}
	m.v1 = i
	i = skipWS(b, i)
	if i >= len(b) {
		return i, false, &syntaxError{i, "unterminated object"}
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), false, nil
	case '}':
		return i + 1, true, nil
	default:
		return i, false, &syntaxError{i, "want ',' or '}' in object"}
	}
}

func skipObject(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return i, &syntaxError{i, "nested too deeply"}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	var m member
	for {
		next, done, err := nextMember(b, i, depth, &m)
		if err != nil {
			return next, err
		}
		if i = next; done {
			return i, nil
		}
	}
}
