package parquetfile

import (
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// convert turns the raw JSON text of a non-null value into the value of
// column c, in v. A byte array points into raw or into w.scratch; the
// column copies it.
func (w *Writer) convert(c int, raw []byte, v *cell) error {
	var err error
	typ := w.types[c]
	switch typ {
	case tString:
		v.b, err = w.str(c, raw)
	case tJSON:
		v.b = raw
	case tBytes:
		s, err := w.str(c, raw)
		if err != nil {
			return err
		}
		n := len(w.scratch)
		w.scratch = append(w.scratch, make([]byte, base64.StdEncoding.DecodedLen(len(s)))...)
		m, err := base64.StdEncoding.Decode(w.scratch[n:], s)
		if err != nil {
			return w.badValue(c, raw, "want a base64 string")
		}
		w.scratch = w.scratch[:n+m]
		v.b = w.scratch[n : n+m]
	case tInt32, tInt64:
		v.n, err = w.integer(c, raw)
		if err == nil && typ == tInt32 && (v.n < math.MinInt32 || v.n > math.MaxInt32) {
			err = w.badValue(c, raw, "out of int32 range")
		}
	case tFloat, tDouble:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return w.badValue(c, raw, "want a number")
		}
		bits := 64
		if typ == tFloat {
			bits = 32
		}
		f, ok := parseDecimal(raw)
		if !ok || typ == tFloat {
			if f, err = strconv.ParseFloat(string(raw), bits); err != nil {
				return w.badValue(c, raw, fmt.Sprintf("out of %s range", w.schema.Columns[c].Type))
			}
		}
		v.n = int64(math.Float64bits(f))
	case tBoolean:
		switch raw[0] {
		case 't':
			v.n = 1
		case 'f':
			v.n = 0
		default:
			return w.badValue(c, raw, "want true or false")
		}
	case tTimestampMS, tTimestampUS:
		if raw[0] != '"' {
			v.n, err = w.integer(c, raw)
			return err
		}
		s, err := w.str(c, raw)
		if err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return w.badValue(c, raw, "want an RFC 3339 timestamp or an integer")
		}
		if typ == tTimestampMS {
			v.n = t.UnixMilli()
		} else {
			v.n = t.UnixMicro()
		}
	case tDate:
		if raw[0] != '"' {
			v.n, err = w.integer(c, raw)
			if err == nil && (v.n < math.MinInt32 || v.n > math.MaxInt32) {
				err = w.badValue(c, raw, "out of date range")
			}
			return err
		}
		s, err := w.str(c, raw)
		if err != nil {
			return err
		}
		t, err := time.Parse(time.DateOnly, string(s))
		if err != nil {
			return w.badValue(c, raw, "want a YYYY-MM-DD date or an integer")
		}
		v.n = t.Unix() / 86400
	default:
		panic("parquetfile: unchecked column type " + w.schema.Columns[c].Type)
	}
	return err
}

// colType numbers the column types (the Type* constants) for the switch on
// every value.
type colType uint8

const (
	tString colType = iota
	tInt32
	tInt64
	tFloat
	tDouble
	tBoolean
	tTimestampMS
	tTimestampUS
	tDate
	tBytes
	tJSON
)

// typeOf is the colType of a checked column type.
func typeOf(typ string) colType {
	i := slices.Index(columnTypes, typ)
	if i < 0 {
		panic("parquetfile: unchecked column type " + typ)
	}
	return colType(i)
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal is strconv.ParseFloat's exact fast path for the common
// number of a record, digits with maybe a fraction and no exponent: an
// integer below 2^53 divided by an exact power of ten is correctly rounded.
// It reports false for anything else (the scanner checked the syntax).
func parseDecimal(raw []byte) (float64, bool) {
	s := raw
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var m uint64
	frac, digits := -1, 0
	for i, d := range s {
		switch {
		case d >= '0' && d <= '9':
			m = m*10 + uint64(d-'0')
			digits++
		case d == '.' && frac < 0:
			frac = i
		default:
			return 0, false
		}
	}
	scale := 0
	if frac >= 0 {
		scale = len(s) - frac - 1
	}
	if digits > 15 || scale >= len(pow10) {
		return 0, false
	}
	f := float64(m) / pow10[scale]
	if neg {
		f = -f
	}
	return f, true
}

// str returns the content of the JSON string raw, column c's, unescaped.
func (w *Writer) str(c int, raw []byte) ([]byte, error) {
	if raw[0] != '"' {
		return nil, w.badValue(c, raw, "want a string")
	}
	s := raw[1 : len(raw)-1]
	if !w.scan.escaped[c] {
		return s, nil
	}
	n := len(w.scratch)
	w.scratch = unescape(w.scratch, s)
	return w.scratch[n:len(w.scratch):len(w.scratch)], nil
}

// integer parses raw as a JSON number without fraction or exponent.
func (w *Writer) integer(c int, raw []byte) (int64, error) {
	s := raw
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return 0, w.badValue(c, raw, "want an integer")
	}
	var u uint64
	for _, d := range s {
		if d < '0' || d > '9' {
			return 0, w.badValue(c, raw, "want an integer")
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, w.badValue(c, raw, "out of int64 range")
		}
		u = u*10 + uint64(d-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), nil // -u wraps to MinInt64 for 1<<63
	case !neg && u <= math.MaxInt64:
		return int64(u), nil
	}
	return 0, w.badValue(c, raw, "out of int64 range")
}

func (w *Writer) badValue(c int, raw []byte, what string) error {
	const max = 40
	shown := string(raw)
	if len(shown) > max {
		shown = shown[:max] + "..."
	}
	return fmt.Errorf("%w: column %q: %s, got %s", ErrBadRecord, w.schema.Columns[c].Name, what, shown)
}
