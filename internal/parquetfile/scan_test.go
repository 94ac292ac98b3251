package parquetfile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzScanAgreesWithEncodingJSON checks the scanner against encoding/json:
// it accepts exactly the JSON objects (of UTF-8 text, nested at most
// maxDepth deep), and finds for a key, and for a key of the object at a
// key, the same raw value (the last one, for a repeated key: {"a":{"b":1},
// "a":2} has no a.b).
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	for i := range 12 {
		v, _ := record(i)
		f.Add(v)
	}
	for _, s := range []string{
		`{}`, ` { "a" : [1, {"b": "}"}] } `, `{"a": 1, "a": "two"}`, `{"\u0061": true}`, `{"a\"": 1}`,
		`{"a": "\ud83d\ude00\ud800x"}`, `{"a": -0.0e+1}`, `[]`, `{"a": 1,}`, `{"a" 1}`, `{"a": 1}x`,
		`{"a": tru}`, `{"a": 1.}`, `{"a": .1}`, `{"a": -}`, `{"a": "\x"}`, `{"a": {"b": [1, 2]}}`,
		"{\"a\": \"\xc3\"}", "{\"a\": \"\x01\"}", `{"a":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`,
		`{"a": {"b": 1}, "a": 2}`, `{"a": {"b": 1}, "a": {"c": 2}}`, `{"a": {"b": 1, "b": 2}, "x": 3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newScanner([]Column{{Name: "a"}, {Name: "b", Field: "a.b"}})
		err := s.scan(data)
		var m map[string]json.RawMessage
		valid := json.Valid(data) && json.Unmarshal(data, &m) == nil && m != nil
		switch {
		case err == nil && !valid:
			t.Fatalf("scanner accepts %q, encoding/json does not", data)
		case err != nil && valid && utf8.Valid(data) && !strings.Contains(err.Error(), "nested deeper"):
			t.Fatalf("scanner refuses %q: %v", data, err)
		case err == nil && !bytes.Equal(s.raw[0], m["a"]):
			t.Fatalf("%q: scanner finds a = %q, encoding/json %q", data, s.raw[0], m["a"])
		}
		if err != nil {
			return
		}
		var a map[string]json.RawMessage
		_ = json.Unmarshal(m["a"], &a) // no a.b unless a is an object
		if !bytes.Equal(s.raw[1], a["b"]) || (s.raw[1] == nil) != (a["b"] == nil) {
			t.Fatalf("%q: scanner finds a.b = %q, encoding/json %q", data, s.raw[1], a["b"])
		}
	})
}

func TestUnescapeDecodesLikeEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`plain`, `\"\\\/\b\f\n\r\t`, `\u00e9\u4e2d`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\ude00\ud83d`,
		`\ud83d\u0041`, `\ud83d\ud83d\ude00`,
	} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatal(err)
		}
		if got := string(unescape(nil, []byte(s))); got != want {
			t.Errorf("unescape(%#q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzShapeAgreesWithFullScan checks the scan of a record against the
// layout of the one before (shape.go): after a, the scanner finds in b what
// a new scanner finds, or the same error.
func FuzzShapeAgreesWithFullScan(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":"x","b":1,"n":2}`, `{"a":"yy","b":-2.5e3,"n":"z"}`},
		{`{"a":"x","b":1}`, `{"a":"x","b":1,"c":2}`},
		{`{"a":"x","b":1}`, `{"a":"x","b":1} `},
		{`{"a":"x","b":1}`, `{"a":"x","b":1}}`},
		{`{"a":"x","b":1}`, `{"a":"\u0041","b":[1,{"q":null}]}`},
		{`{"a":"x","b":1}`, `{"a":"x\x01","b":1}`},
		{`{"a":"x","b":1}`, `{"a":"x","b":1 ,"b":2}`},
		{`{"a":1,"a":2}`, `{"a":3,"a":"4"}`},
		{` {"x":{"y":1},"a":2}`, ` {"x":{"y":3},"a":4}`},
		{`{"x":null,"a":2}`, `{"x":{"y":3},"a":4}`},
		{`{"x":{"y":1},"x":2}`, `{"x":{"y":3},"a":4}`},
		{`{"x":{"y":1},"a":2}`, `{"x":{"y":3},"x":{"z":4}}`},
		{`{"b":true}`, `{"b":truex}`},
		{`{"b":1}`, `{"b":1.}`},
		{`{}`, `{}`},
	} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	cols := []Column{{Name: "a"}, {Name: "b"}, {Name: "n", Field: "x.y"}, {Name: "x"}}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s := newScanner(cols)
		_ = s.scan(a)
		err := s.scan(b)
		fresh := newScanner(cols)
		want := fresh.scan(b)
		if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
			t.Fatalf("after %q, %q: %v; a new scanner: %v", a, b, err, want)
		}
		if err != nil {
			return
		}
		for c := range cols {
			if !bytes.Equal(s.raw[c], fresh.raw[c]) || (s.raw[c] == nil) != (fresh.raw[c] == nil) ||
				s.raw[c] != nil && s.escaped[c] != fresh.escaped[c] {
				t.Fatalf("after %q, %q: column %d is %q (escaped %v), a new scanner finds %q (%v)",
					a, b, c, s.raw[c], s.escaped[c], fresh.raw[c], fresh.escaped[c])
			}
		}
	})
}
