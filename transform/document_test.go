package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// Values whose validity the scanner must judge exactly as encoding/json
// does (for objects; anything else is ErrDecode by rule).
var scanCorpus = []string{
	`{}`, ` { } `, `{"a":1}`, "{\"a\":1}\n", `{"a":-0.5e+10}`, `{"a":-}`, `{"a":01}`, `{"a":1.}`,
	`{"a":1e}`, `{"a":.5}`, `{"a":1E-2}`, `{"a":"\u00e9\n\t\"\\\/"}`, `{"a":"\x"}`, `{"a":"\u12"}`,
	`{"a":"\u12G4"}`, "{\"a\":\"\x01\"}", `{"a":"unterminated}`, `{"a":tru}`, `{"a":true,"b":false,"c":null}`,
	`{"a":nul}`, `{"a":fals}`, `{"a":[]}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":[1,[2,[3,{}]]]}`, `{"a":[`,
	`{"a":{"b":{"c":{}}}}`, `{"a":{"b":1,}}`, `{"a":{"b"}}`, `{"a":{1:2}}`, `{"a" 1}`, `{"a":1 "b":2}`,
	`{"a":1,}`, `{,}`, `{"a":1}}`, `{"a":1}{}`, `{`, `{"a"`, `{"a":`, `{"a":1`, `[]`, `1`, `"s"`,
	`null`, ``, `   `, `{"a":"é"}`, `{"a":{"b":[true,false,null,"x",-1.5]}, "c" : [ ] }`,
	`{"a":{}, "b":{ }, "c":[ ]}`, `{"a":"\ud83d\ude00"}`, `{"a":0}`, `{"a":-0}`, `{"a":-01}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range scanCorpus {
		checkAgainstStdlib(t, []byte(v))
	}
}

func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, v := range scanCorpus {
		f.Add([]byte(v))
	}
	f.Fuzz(checkAgainstStdlib)
}

func checkAgainstStdlib(t *testing.T, v []byte) {
	checkFind(t, v)
	var d document
	d.reset(rec(string(v)))
	err := d.parse()
	var m map[string]json.RawMessage
	stdErr := json.Unmarshal(v, &m)
	if stdErr == nil && m == nil { // "null" unmarshals into a nil map
		stdErr = errors.New("null")
	}
	if (err == nil) != (stdErr == nil) {
		t.Fatalf("%q: scanner err %v, encoding/json err %v", v, err, stdErr)
	}
	if err != nil {
		if !errors.Is(err, ErrDecode) {
			t.Fatalf("%q: %v is not ErrDecode", v, err)
		}
		return
	}
	// Every field's value is the one encoding/json found (last key wins).
	// Keys that are not UTF-8 are skipped: encoding/json rewrites them, the
	// scanner passes bytes through as they are.
	for i := range d.fields {
		name := unquote(d.src[d.fields[i].k0-1 : d.fields[i].k1+1])
		if !utf8.ValidString(name) {
			continue
		}
		got, ok, _ := d.get([]string{name})
		if !ok || !bytes.Equal(got, m[name]) {
			t.Fatalf("%q: field %q = %s, encoding/json %s", v, name, got, m[name])
		}
	}
	// Encoding an unchanged document gives an equivalent object.
	var s slab
	var back map[string]json.RawMessage
	if out := d.encode(&s); json.Unmarshal(out, &back) != nil || len(back) != len(m) {
		t.Fatalf("%q: re-encoded as %s", v, out)
	}
}

func TestScannerRejectsDeepNesting(t *testing.T) {
	deep := `{"a":` + string(bytes.Repeat([]byte("["), maxDepth+1)) + string(bytes.Repeat([]byte("]"), maxDepth+1)) + `}`
	var d document
	d.reset(rec(deep))
	var de *DecodeError
	if err := d.parse(); !errors.As(err, &de) || de.Msg != "nested too deeply" {
		t.Errorf("err = %v", err)
	}
	deep = `{"a":` + string(bytes.Repeat([]byte(`{"a":`), maxDepth+1)) + `1` + string(bytes.Repeat([]byte("}"), maxDepth+2))
	d.reset(rec(deep))
	if err := d.parse(); !errors.As(err, &de) || de.Msg != "nested too deeply" {
		t.Errorf("err = %v", err)
	}
}

func TestDecodeErrorNamesRecordAndByte(t *testing.T) {
	var d document
	d.reset(rec(`{"a":x}`))
	err := d.parse()
	if want := "cannot decode record value: record orders[3]@42: byte 5: unexpected character looking for a value"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestSlabCarvesIndependentSlices(t *testing.T) {
	var s slab
	a := s.alloc(3)
	copy(a, "abc")
	b := s.alloc(2)
	copy(b, "de")
	a = append(a, 'X') // must not overwrite b
	if string(b) != "de" || string(a) != "abcX" {
		t.Errorf("a=%q b=%q", a, b)
	}
	if big := s.alloc(slabChunk); len(big) != slabChunk {
		t.Error("big alloc")
	}
	for range 2 * slabChunk / 100 {
		s.alloc(100) // spans chunks
	}
}

// checkFind: find (FieldReader's read of one top-level field, without a
// list of fields) agrees with parse and get on v: the same error at the
// same byte, and for every key of v and a key not in it, the same value.
func checkFind(t *testing.T, v []byte) {
	t.Helper()
	var d, f document
	d.reset(rec(string(v)))
	perr := d.parse()
	names := []string{"no such key", ""}
	for i := range d.fields {
		names = append(names, unquote(d.src[d.fields[i].k0-1:d.fields[i].k1+1]))
	}
	for _, name := range names {
		f.reset(rec(string(v)))
		got, ok, err := f.find(name)
		if perr != nil {
			var want, fe *DecodeError
			if !errors.As(perr, &want) || !errors.As(err, &fe) || fe.Pos != want.Pos || fe.Msg != want.Msg {
				t.Fatalf("%q: find %q: error %v, want parse's %v", v, name, err, perr)
			}
			continue
		}
		want, wok, _ := d.get([]string{name})
		if err != nil || ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("%q: find %q = %q,%v (%v); get %q,%v", v, name, got, ok, err, want, wok)
		}
	}
}

// TestFindComparesAKeyByItsText: a key with escapes is the text they
// stand for, not its bytes in the value.
func TestFindComparesAKeyByItsText(t *testing.T) {
	v := []byte(`{"\u0061":1,"b":2}`)
	for name, want := range map[string]string{`a`: `1`, `\u0061`: ``, `b`: `2`} {
		var d document
		d.reset(rec(string(v)))
		got, ok, err := d.find(name)
		if err != nil || ok != (want != "") || string(got) != want {
			t.Errorf("%s: find %q = %q,%v (%v), want %q", v, name, got, ok, err, want)
		}
	}
}
