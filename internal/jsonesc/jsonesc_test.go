package jsonesc

import (
	"encoding/json"
	"testing"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct{ in, wtf8, utf8 string }{
		{`plain`, "plain", "plain"},
		{`a\"b\\c\/d\b\f\n\r\t`, "a\"b\\c/d\b\f\n\r\t", "a\"b\\c/d\b\f\n\r\t"},
		{`\u00e9\u20AC`, "é€", "é€"},
		{`\ud83d\ude00`, "😀", "😀"},
		{`\ud800`, "\xed\xa0\x80", "\ufffd"},
		{`\udfff`, "\xed\xbf\xbf", "\ufffd"},
		{`\ud800\u0041`, "\xed\xa0\x80A", "\ufffdA"},
		{"\xff\\n", "\xff\n", "\xff\n"}, // bytes outside escapes are kept
	} {
		if got := string(Append(nil, []byte(c.in), true)); got != c.wtf8 {
			t.Errorf("Append(%q, wtf8) = %q, want %q", c.in, got, c.wtf8)
		}
		if got := string(Append(nil, []byte(c.in), false)); got != c.utf8 {
			t.Errorf("Append(%q) = %q, want %q", c.in, got, c.utf8)
		}
		var std string
		if json.Unmarshal([]byte(`"`+c.in+`"`), &std) == nil && c.utf8 != std && c.in != "\xff\\n" {
			t.Errorf("%q: encoding/json gives %q, Append without wtf8 %q", c.in, std, c.utf8)
		}
	}
}
