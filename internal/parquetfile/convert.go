package parquetfile

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
)

// convert turns the raw JSON text of a non-null value into the parquet value
// of column c. Byte array values point into raw or into w.scratch; Append
// copies them before it keeps the row.
func (w *Writer) convert(c int, raw []byte) (parquet.Value, error) {
	switch typ := w.schema.Columns[c].Type; typ {
	case TypeString:
		s, err := w.str(c, raw)
		return parquet.ByteArrayValue(s), err
	case TypeJSON:
		return parquet.ByteArrayValue(raw), nil
	case TypeBytes:
		s, err := w.str(c, raw)
		if err != nil {
			return parquet.Value{}, err
		}
		n := len(w.scratch)
		w.scratch = append(w.scratch, make([]byte, base64.StdEncoding.DecodedLen(len(s)))...)
		m, err := base64.StdEncoding.Decode(w.scratch[n:], s)
		if err != nil {
			return parquet.Value{}, w.badValue(c, raw, "want a base64 string")
		}
		w.scratch = w.scratch[:n+m]
		return parquet.ByteArrayValue(w.scratch[n : n+m]), nil
	case TypeInt32, TypeInt64:
		v, err := w.integer(c, raw)
		if err != nil {
			return parquet.Value{}, err
		}
		if typ == TypeInt64 {
			return parquet.Int64Value(v), nil
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return parquet.Value{}, w.badValue(c, raw, "out of int32 range")
		}
		return parquet.Int32Value(int32(v)), nil
	case TypeFloat, TypeDouble:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return parquet.Value{}, w.badValue(c, raw, "want a number")
		}
		bits := 64
		if typ == TypeFloat {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(raw), bits)
		if err != nil {
			return parquet.Value{}, w.badValue(c, raw, fmt.Sprintf("out of %s range", typ))
		}
		if typ == TypeFloat {
			return parquet.FloatValue(float32(f)), nil
		}
		return parquet.DoubleValue(f), nil
	case TypeBoolean:
		switch raw[0] {
		case 't':
			return parquet.BooleanValue(true), nil
		case 'f':
			return parquet.BooleanValue(false), nil
		}
		return parquet.Value{}, w.badValue(c, raw, "want true or false")
	case TypeTimestampMS, TypeTimestampUS:
		if raw[0] != '"' {
			v, err := w.integer(c, raw)
			return parquet.Int64Value(v), err
		}
		s, err := w.str(c, raw)
		if err != nil {
			return parquet.Value{}, err
		}
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return parquet.Value{}, w.badValue(c, raw, "want an RFC 3339 timestamp or an integer")
		}
		if typ == TypeTimestampMS {
			return parquet.Int64Value(t.UnixMilli()), nil
		}
		return parquet.Int64Value(t.UnixMicro()), nil
	case TypeDate:
		if raw[0] != '"' {
			v, err := w.integer(c, raw)
			if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
				err = w.badValue(c, raw, "out of date range")
			}
			return parquet.Int32Value(int32(v)), err
		}
		s, err := w.str(c, raw)
		if err != nil {
			return parquet.Value{}, err
		}
		t, err := time.Parse(time.DateOnly, string(s))
		if err != nil {
			return parquet.Value{}, w.badValue(c, raw, "want a YYYY-MM-DD date or an integer")
		}
		return parquet.Int32Value(int32(t.Unix() / 86400)), nil
	}
	panic("parquetfile: unchecked column type " + w.schema.Columns[c].Type)
}

// str returns the content of the JSON string raw, unescaped.
func (w *Writer) str(c int, raw []byte) ([]byte, error) {
	if raw[0] != '"' {
		return nil, w.badValue(c, raw, "want a string")
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
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

// size is the estimated plain-encoded size of a value, for Buffered.
func size(v parquet.Value) int {
	switch v.Kind() {
	case parquet.ByteArray:
		return 4 + len(v.ByteArray())
	case parquet.Int64, parquet.Double:
		return 8
	case parquet.Int32, parquet.Float:
		return 4
	}
	return 1
}
