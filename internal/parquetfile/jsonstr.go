package parquetfile

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"

	"github.com/connector-dev/connector/internal/jsonesc"
)

// Masks of the low and the high bit of each byte of a word.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// special has the high bit set in the lowest byte of x that is a quote, a
// backslash or a control character (and maybe in bytes above that one,
// which the caller ignores).
func special(x uint64) uint64 {
	q := x ^ (lowBits * '"')
	b := x ^ (lowBits * '\\')
	return ((q-lowBits)&^q | (b-lowBits)&^b | (x-lowBits*0x20)&^x) & highBits
}

// scanString checks the string at data[i] ('"') and returns the index after
// its closing quote and whether it holds escapes. Its bytes must be UTF-8.
//
// It skips 8 bytes at a time while none needs a look: strings are most of
// a record's bytes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	start := i
	nonASCII := uint64(highBits) // stop at a non-ASCII byte, until one is seen
	for i++; ; i++ {
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			if m := special(x) | x&nonASCII; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(data) {
			break
		}
		switch c := data[i]; {
		case c == '"':
			if nonASCII == 0 && !utf8.Valid(data[start+1:i]) {
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
			nonASCII = 0
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

// unescape appends the content of a checked string (without its quotes) to
// dst. A lone surrogate becomes U+FFFD, as in encoding/json.
func unescape(dst, s []byte) []byte { return jsonesc.Append(dst, s, false) }
