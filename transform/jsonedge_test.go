package transform

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// jsonGen builds random JSON objects whose strings hold escapes,
// unicode, braces and quotes, with duplicate keys.
type jsonGen struct{ r *rand.Rand }

var jsonGenKeys = []string{"a", "b", `\u0061`, `a\"`, `{`, `}`, `\\`, `é`, `\u00e9`, `\ud83d\ude00`, `😀`, `a.b`, ``, `\/`, `/`}

func (g jsonGen) str() string {
	parts := []string{"x", "{", "}", "[", "]", `\"`, `\\`, `\u0041`, `\n`, "é", "😀", `\ud83d\ude00`, ",", ":", " ", `\/`, `\u0000`}
	var b bytes.Buffer
	b.WriteByte('"')
	for n := g.r.Intn(5); n > 0; n-- {
		b.WriteString(parts[g.r.Intn(len(parts))])
	}
	b.WriteByte('"')
	return b.String()
}

func (g jsonGen) num() string {
	nums := []string{"0", "-0", "1", "1.0", "1e3", "1E+3", "1000", "-1.5e-2", "12345678901234567890", "1e400", "-1e400", "1e-400", "0.1", "9007199254740993"}
	return nums[g.r.Intn(len(nums))]
}

func (g jsonGen) value(depth int) string {
	ws := func() string { return []string{"", " ", "\n", "\t", "\r\n "}[g.r.Intn(5)] }
	switch k := g.r.Intn(8); {
	case k == 0 && depth < 4:
		return g.object(depth + 1)
	case k == 1 && depth < 4:
		var b bytes.Buffer
		b.WriteString("[" + ws())
		for i, n := 0, g.r.Intn(4); i < n; i++ {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			b.WriteString(g.value(depth + 1))
		}
		b.WriteString(ws() + "]")
		return b.String()
	case k == 2:
		return []string{"true", "false", "null"}[g.r.Intn(3)]
	case k == 3 || k == 4:
		return g.num()
	}
	return g.str()
}

func (g jsonGen) object(depth int) string {
	ws := func() string { return []string{"", " ", "\n", "\t"}[g.r.Intn(4)] }
	var b bytes.Buffer
	b.WriteString("{" + ws())
	for i, n := 0, g.r.Intn(6); i < n; i++ {
		if i > 0 {
			b.WriteString(ws() + "," + ws())
		}
		b.WriteString(`"` + jsonGenKeys[g.r.Intn(len(jsonGenKeys))] + `"` + ws() + ":" + ws() + g.value(depth))
	}
	b.WriteString(ws() + "}")
	return b.String()
}

// stdPaths lists the decoded key paths of v, one and two levels deep.
func stdPaths(v []byte) [][]string {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	var out [][]string
	for k, sub := range m {
		out = append(out, []string{k})
		var mm map[string]json.RawMessage
		if json.Unmarshal(sub, &mm) == nil {
			for k2 := range mm {
				out = append(out, []string{k, k2})
			}
		}
	}
	return out
}

func stdGet(v []byte, path []string) (json.RawMessage, bool) {
	var cur json.RawMessage = v
	for _, p := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil || m == nil {
			return nil, false
		}
		var ok bool
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestScannerAgreesWithEncodingJSONOnRandomObjects: random objects (escapes,
// unicode, braces and quotes in strings and keys, duplicate keys, odd
// numbers, whitespace) and their mutations: the scanner accepts exactly what
// encoding/json accepts, and get returns what encoding/json finds (last
// duplicate wins), one and two levels deep.
func TestScannerAgreesWithEncodingJSONOnRandomObjects(t *testing.T) {
	g := jsonGen{rand.New(rand.NewSource(1))}
	for i := 0; i < 20000; i++ {
		v := []byte(g.object(0))
		checkFind(t, v)
		var d document
		d.reset(rec(string(v)))
		err := d.parse()
		valid := json.Valid(v)
		if (err == nil) != valid {
			t.Fatalf("%q: scanner err %v, json.Valid %v", v, err, valid)
		}
		if err != nil {
			continue
		}
		for _, p := range stdPaths(v) {
			got, ok, _ := d.get(p)
			want, wok := stdGet(v, p)
			if ok != wok || !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Fatalf("%q: get %q = %q,%v; std %q,%v", v, p, got, ok, want, wok)
			}
		}
		// mutations: validity must agree
		for j := 0; j < 5 && len(v) > 0; j++ {
			m := append([]byte(nil), v...)
			pos := g.r.Intn(len(m))
			switch g.r.Intn(3) {
			case 0:
				m = append(m[:pos], m[pos+1:]...)
			case 1:
				chars := "{}[]\",:\\ 0e.-tfnu\x01\x7f"
				m[pos] = chars[g.r.Intn(len(chars))]
			case 2:
				m = m[:pos]
			}
			checkFind(t, m)
			var d2 document
			d2.reset(rec(string(m)))
			e2 := d2.parse()
			var mm map[string]json.RawMessage
			se := json.Unmarshal(m, &mm)
			okStd := se == nil && mm != nil
			if (e2 == nil) != okStd {
				t.Fatalf("mutated %q: scanner err %v, std %v", m, e2, se)
			}
		}
	}
}

// A bound of NaN or an infinity (YAML .nan, .inf) is refused, naming its
// key: no number is ordered against NaN (gte and lte both kept every
// record), and a JSON number beyond float64 (1e400) was both >= and <=
// .inf yet not eq it.
func TestFilterRefusesBoundsThatAreNotFinite(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1)), json.Number("1e400")} {
		for _, op := range []Op{OpEq, OpGte, OpLte} {
			_, err := NewFilter(Condition{Field: "n", Op: op, Value: v})
			if err == nil || !strings.Contains(err.Error(), "filter.condition.value") {
				t.Errorf("%s %v: %v, want a config error naming filter.condition.value", op, v, err)
			}
		}
		_, err := NewFilter(Condition{Field: "n", Op: OpIn, Values: []any{1, v}})
		if err == nil || !strings.Contains(err.Error(), "filter.condition.values[1]") {
			t.Errorf("in [1, %v]: %v, want a config error naming filter.condition.values[1]", v, err)
		}
	}
}

// A valid string with escapes decodes as encoding/json decodes it.
func TestUnquoteAgreesWithEncodingJSONOnValidStrings(t *testing.T) {
	g := jsonGen{rand.New(rand.NewSource(3))}
	for range 20000 {
		q := g.str()
		var want string
		if err := json.Unmarshal([]byte(q), &want); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := unquote([]byte(q)); got != want {
			t.Fatalf("unquote(%s) = %q, want %q", q, got, want)
		}
	}
}

// The scanner passes string bytes that are not UTF-8 through, and so does
// the decoding of a string with escapes: it once went through
// json.Unmarshal, which made every invalid byte and lone surrogate U+FFFD,
// so a dedup keyed by such a field dropped a different record as a repeat.
func TestStringsWithEscapesKeepTheirBytes(t *testing.T) {
	run := func(a, b string) bool {
		d, err := NewDedup(DedupConfig{Name: "r", Key: "id", TTL: time.Hour}, NewMemKV())
		if err != nil {
			t.Fatal(err)
		}
		applied(t, d, rec(a))
		return mustApply(t, d, rec(b))
	}
	if !run("{\"id\":\"\xff\"}", "{\"id\":\"\xfe\"}") {
		t.Fatal("control: distinct raw bytes without an escape were taken for one key")
	}
	if !run("{\"id\":\"\xff\\n\"}", "{\"id\":\"\xfe\\n\"}") {
		t.Errorf("dedup dropped {\"id\":\"\\xfe\\n\"} as a repeat of {\"id\":\"\\xff\\n\"}")
	}
	// Lone surrogates (valid JSON grammar; JavaScript and Python keep
	// them apart) stay apart.
	if !run(`{"id":"\ud800"}`, `{"id":"\udfff"}`) {
		t.Errorf(`dedup dropped {"id":"\udfff"} as a repeat of {"id":"\ud800"}`)
	}
	// The filter agrees: a raw 0xff is not U+FFFD, with an escape in the
	// string or without.
	f, _ := NewFilter(Condition{Field: "s", Op: OpEq, Value: "\ufffd\n"})
	g, _ := NewFilter(Condition{Field: "s", Op: OpEq, Value: "\ufffd"})
	a, b := mustApply(t, f, rec("{\"s\":\"\xff\\n\"}")), mustApply(t, g, rec("{\"s\":\"\xff\"}"))
	if a != b {
		t.Errorf("0xff equals U+FFFD with an escape in the string (%v) but not without (%v)", a, b)
	}
}
