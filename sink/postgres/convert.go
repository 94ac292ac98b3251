package postgres

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/connector-dev/connector/transform"
)

// converter turns a field's raw JSON text into a value COPY encodes for its
// column, or says why it cannot (the record is then a bad record: nothing
// that reaches COPY fails there for its type, range or length). raw is
// never nil or "null": the caller handles absent and null fields.
type converter func(raw []byte) (any, error)

// converterFor returns the converter of a column type, or why the sink
// cannot write that type.
func converterFor(oid uint32, typmod int32) (converter, string) {
	switch oid {
	case pgtype.Int2OID:
		return intConv(math.MinInt16, math.MaxInt16), ""
	case pgtype.Int4OID:
		return intConv(math.MinInt32, math.MaxInt32), ""
	case pgtype.Int8OID:
		return intConv(math.MinInt64, math.MaxInt64), ""
	case pgtype.Float4OID:
		return floatConv(math.MaxFloat32), ""
	case pgtype.Float8OID:
		return floatConv(math.MaxFloat64), ""
	case pgtype.NumericOID:
		return numericConv(typmod), ""
	case pgtype.BoolOID:
		return boolConv, ""
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		limit := -1
		if (oid == pgtype.VarcharOID || oid == pgtype.BPCharOID) && typmod > 4 {
			limit = int(typmod - 4)
		}
		return textConv(limit), ""
	case pgtype.JSONOID, pgtype.JSONBOID:
		return jsonConv, ""
	case pgtype.TimestamptzOID, pgtype.TimestampOID:
		return timeConv(oid == pgtype.TimestampOID), ""
	case pgtype.DateOID:
		return dateConv, ""
	case pgtype.UUIDOID:
		return uuidConv, ""
	case pgtype.ByteaOID:
		return byteaConv, ""
	}
	return nil, "type not supported (supported: smallint, integer, bigint, real, double precision, numeric, boolean, text, varchar, char, json, jsonb, timestamptz, timestamp, date, uuid, bytea)"
}

var errWantString = errors.New("want a JSON string")

// PostgreSQL's ranges: 4713 BC (year -4712) to 294276 AD for timestamps,
// 5874897 AD for dates.
const (
	minYear          = -4712
	maxTimestampYear = 294276
	maxDateYear      = 5874897
)

func stringOf(raw []byte) (string, error) {
	if raw[0] != '"' {
		return "", errWantString
	}
	return transform.Unquote(raw), nil
}

// numberText is a JSON number's text, or a JSON string's content (numbers
// often travel as strings).
func numberText(raw []byte) string {
	if raw[0] == '"' {
		return transform.Unquote(raw)
	}
	return string(raw)
}

func intConv(lo, hi int64) converter {
	return func(raw []byte) (any, error) {
		s := numberText(raw)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			// 1e3 or 12.0: integral values written as floats.
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
				return nil, fmt.Errorf("%s is not an integer from %d to %d", raw, lo, hi)
			}
			n = int64(f)
		}
		if n < lo || n > hi {
			return nil, fmt.Errorf("%s is out of range (%d to %d)", raw, lo, hi)
		}
		return n, nil
	}
}

func floatConv(max float64) converter {
	return func(raw []byte) (any, error) {
		f, err := strconv.ParseFloat(numberText(raw), 64)
		if err != nil || math.Abs(f) > max {
			return nil, fmt.Errorf("%s is not a number in range", raw)
		}
		return f, nil
	}
}

// numericConv checks a numeric(p,s) value as PostgreSQL would: rounded
// to s decimals, it has at most p-s digits before the point; no infinity.
func numericConv(typmod int32) converter {
	precision, scale := -1, 0
	if typmod >= 4 {
		precision, scale = int((typmod-4)>>16)&0xffff, int(typmod-4)&0xffff
	}
	return func(raw []byte) (any, error) {
		n, ok := parseNumeric(numberText(raw))
		if !ok {
			return nil, fmt.Errorf("%s is not a number", raw)
		}
		if precision < 0 || n.NaN {
			return n, nil
		}
		if n.InfinityModifier != pgtype.Finite {
			return nil, fmt.Errorf("%s: numeric(%d,%d) cannot hold infinity", raw, precision, scale)
		}
		if intDigits(n.Int, int(n.Exp), scale) > precision-scale {
			return nil, fmt.Errorf("%s does not fit numeric(%d,%d) (at most %d digits before the point)", raw, precision, scale, precision-scale)
		}
		return n, nil
	}
}

// parseNumeric reads a JSON number (exponents included) exactly, or NaN,
// Infinity and -Infinity.
func parseNumeric(s string) (pgtype.Numeric, bool) {
	switch s {
	case "NaN":
		return pgtype.Numeric{NaN: true, Valid: true}, true
	case "Infinity", "+Infinity":
		return pgtype.Numeric{InfinityModifier: pgtype.Infinity, Valid: true}, true
	case "-Infinity":
		return pgtype.Numeric{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, true
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1_000_000 || e < -1_000_000 {
			return pgtype.Numeric{}, false
		}
		mant, exp = s[:i], e
	}
	if whole, frac, found := strings.Cut(mant, "."); found {
		if frac == "" || whole == "" || whole == "-" || whole == "+" {
			return pgtype.Numeric{}, false
		}
		mant, exp = whole+frac, exp-len(frac)
	}
	v, ok := new(big.Int).SetString(mant, 10)
	if !ok {
		return pgtype.Numeric{}, false
	}
	return pgtype.Numeric{Int: v, Exp: int32(exp), Valid: true}, true
}

// intDigits counts the digits before the point of v*10^exp rounded (half
// away from zero) to scale decimals.
func intDigits(v *big.Int, exp, scale int) int {
	a := new(big.Int).Abs(v)
	if exp < -scale { // round away the extra decimals
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-exp-scale)), nil)
		q, r := new(big.Int).QuoRem(a, div, new(big.Int))
		if r.Lsh(r, 1).Cmp(div) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		a, exp = q, -scale
	}
	if a.Sign() == 0 {
		return 0
	}
	return max(0, len(a.String())+exp)
}

func boolConv(raw []byte) (any, error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, fmt.Errorf("%s is not true or false", raw)
}

// textConv takes a string's content, or any other value's JSON text; limit
// is a varchar(n)/char(n) length in characters (-1: none).
func textConv(limit int) converter {
	return func(raw []byte) (any, error) {
		s := string(raw)
		if raw[0] == '"' {
			s = transform.Unquote(raw)
		}
		if !utf8.ValidString(s) {
			return nil, errors.New("text is not valid UTF-8")
		}
		if limit >= 0 && utf8.RuneCountInString(s) > limit {
			return nil, fmt.Errorf("%d characters, more than the column's %d", utf8.RuneCountInString(s), limit)
		}
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return nil, errors.New("text holds a NUL character, which PostgreSQL text cannot")
		}
		return s, nil
	}
}

func jsonConv(raw []byte) (any, error) {
	if !utf8.Valid(raw) {
		return nil, errors.New("JSON is not valid UTF-8")
	}
	if bytes.Contains(raw, []byte(`\u0000`)) {
		return nil, errors.New(`JSON holds \u0000, which PostgreSQL json cannot`)
	}
	return []byte(raw), nil
}

// Timestamps: RFC 3339 strings, or numbers of milliseconds since the Unix
// epoch.
func timeConv(local bool) converter {
	return func(raw []byte) (any, error) {
		var t time.Time
		if raw[0] == '"' {
			var err error
			if t, err = time.Parse(time.RFC3339Nano, transform.Unquote(raw)); err != nil {
				if local {
					t, err = time.Parse("2006-01-02T15:04:05.999999999", transform.Unquote(raw))
				}
				if err != nil {
					return nil, fmt.Errorf("%s is not an RFC 3339 timestamp", raw)
				}
			}
		} else {
			ms, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s is neither an RFC 3339 string nor milliseconds since the epoch", raw)
			}
			t = time.UnixMilli(ms).UTC()
		}
		if y := t.Year(); y < minYear || y > maxTimestampYear {
			return nil, fmt.Errorf("%s is outside PostgreSQL's timestamp range (4713 BC to 294276 AD)", raw)
		}
		if local {
			return pgtype.Timestamp{Time: time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), Valid: true}, nil
		}
		return t, nil
	}
}

func dateConv(raw []byte) (any, error) {
	s, err := stringOf(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: want a date string (2006-01-02)", raw)
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("%s is not a date (2006-01-02)", raw)
		}
	}
	if y := t.Year(); y < minYear || y > maxDateYear {
		return nil, fmt.Errorf("%s is outside PostgreSQL's date range", raw)
	}
	return pgtype.Date{Time: time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), Valid: true}, nil
}

func uuidConv(raw []byte) (any, error) {
	s, err := stringOf(raw)
	var u pgtype.UUID
	if err == nil {
		err = u.Scan(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a UUID", raw)
	}
	return u, nil
}

// bytea: a base64 string (standard encoding), as JSON carries bytes.
func byteaConv(raw []byte) (any, error) {
	s, err := stringOf(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: want a base64 string", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64", raw)
	}
	return b, nil
}
