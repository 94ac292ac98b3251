// Package jsonesc decodes the escapes of JSON strings that a scanner
// (package transform's, package parquetfile's) has already checked: it owns
// nothing else, and checks nothing.
package jsonesc

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// Append appends s, the content of a checked JSON string (without its
// quotes), decoded, to dst. Bytes outside escapes are kept as they are. A
// \u escape of a lone surrogate becomes its own three bytes (WTF-8) when
// wtf8 is true, so distinct strings never decode to the same text; else
// U+FFFD, as encoding/json does (where the output must be UTF-8).
func Append(dst, s []byte, wtf8 bool) []byte {
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		c := s[i+1]
		s = s[i+2:]
		switch c {
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
			r := Hex4(s)
			s = s[4:]
			if !utf16.IsSurrogate(r) {
				dst = utf8.AppendRune(dst, r)
				continue
			}
			if r < 0xdc00 && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				if lo := Hex4(s[2:]); lo >= 0xdc00 && lo < 0xe000 {
					dst = utf8.AppendRune(dst, utf16.DecodeRune(r, lo))
					s = s[6:]
					continue
				}
			}
			if wtf8 {
				dst = append(dst, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
			} else {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			}
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
}

// Hex4 is the value of the four hex digits (checked) at the start of b.
func Hex4(b []byte) rune {
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
