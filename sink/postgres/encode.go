package postgres

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// The writers encode rows themselves, straight from each field's JSON
// bytes into COPY's binary format, instead of building a []any per row for
// pgx to encode through its per-value plan lookup: that was most of the
// sink's CPU and allocations per row.
//
// Each column has a fast path for the common shapes of its type (a plain
// integer, a string without escapes, a canonical RFC 3339 timestamp). A
// fast path only ever accepts a value its converter accepts, and writes
// the bytes pgx writes for the converter's value; whatever it is not sure
// of it declines, and the column's converter and pgx's encoding of its
// value (the path every value took before) decide. So the checks, their
// errors, and the bytes the server gets are the converters' and pgx's;
// encode_test.go compares both paths.

// copyHeader starts a binary COPY stream: the signature, flags, and the
// length of the header extension.
var copyHeader = []byte("PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000")

// copyTrailer ends a binary COPY stream (a field count of -1).
var copyTrailer = []byte{0xff, 0xff}

// fastEncoder appends raw (never nil or null) as one field of a binary
// COPY row, its length first, or declines (ok false) leaving dst as it was.
type fastEncoder func(dst, raw []byte) (out []byte, ok bool)

// rowEncoder turns records into binary COPY rows. One per goroutine.
type rowEncoder struct {
	plan   *plan
	fields *transform.FieldsReader
	fast   []fastEncoder // by column; nil: the converter always
	types  *pgtype.Map   // encodes the converters' values
}

func newRowEncoder(p *plan) *rowEncoder {
	e := &rowEncoder{plan: p, fields: transform.NewFieldsReader(p.fields()), fast: make([]fastEncoder, len(p.columns)), types: pgtype.NewMap()}
	for i, c := range p.columns {
		e.fast[i] = fastEncoderFor(c.oid, c.typmod)
	}
	return e
}

// appendRow appends r's row to dst; on an error (ErrBadRecord: a field
// does not fit its column) dst is returned as it was.
func (e *rowEncoder) appendRow(dst []byte, r *record.Record) ([]byte, error) {
	raws, err := e.fields.Read(r)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", sink.ErrBadRecord, err)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.plan.columns)))
	for i := range e.plan.columns {
		c := &e.plan.columns[i]
		raw := raws[i]
		if raw == nil || string(raw) == "null" {
			if c.notNull {
				return dst[:start], fmt.Errorf("%w: column %s is NOT NULL and field %s is absent or null", sink.ErrBadRecord, c.name, c.field)
			}
			dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1: NULL
			continue
		}
		if f := e.fast[i]; f != nil {
			var ok bool
			if dst, ok = f(dst, raw); ok {
				continue
			}
		}
		v, err := c.conv(raw)
		if err != nil {
			return dst[:start], fmt.Errorf("%w: column %s (%s), field %s: %w", sink.ErrBadRecord, c.name, c.typ, c.field, err)
		}
		if dst, err = e.encodeValue(dst, c.oid, v); err != nil {
			return dst[:start], fmt.Errorf("%w: column %s (%s), field %s: %w", sink.ErrBadRecord, c.name, c.typ, c.field, err)
		}
	}
	return dst, nil
}

// encodeValue appends a converter's value as pgx's CopyFrom would.
func (e *rowEncoder) encodeValue(dst []byte, oid uint32, v any) ([]byte, error) {
	at := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32)
	out, err := e.types.Encode(oid, pgtype.BinaryFormatCode, v, dst)
	if err != nil {
		return dst[:at], err
	}
	if out == nil { // NULL
		return dst, nil
	}
	binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	return out, nil
}

func fastEncoderFor(oid uint32, typmod int32) fastEncoder {
	switch oid {
	case pgtype.Int2OID:
		return intFast(2, math.MinInt16, math.MaxInt16)
	case pgtype.Int4OID:
		return intFast(4, math.MinInt32, math.MaxInt32)
	case pgtype.Int8OID:
		return intFast(8, math.MinInt64, math.MaxInt64)
	case pgtype.BoolOID:
		return boolFast
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		limit := -1
		if (oid == pgtype.VarcharOID || oid == pgtype.BPCharOID) && typmod > 4 {
			limit = int(typmod - 4)
		}
		return textFast(limit)
	case pgtype.JSONOID:
		return jsonFast(false)
	case pgtype.JSONBOID:
		return jsonFast(true)
	case pgtype.TimestamptzOID:
		return timeFast(false)
	case pgtype.TimestampOID:
		return timeFast(true)
	}
	return nil
}

// plainString returns a JSON string's content if it has no escapes.
func plainString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// parseInt reads -?[0-9]{1,18}: no overflow possible; anything else (more
// digits, a float, a sign +) is left to the converter.
func parseInt(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func intFast(size int, lo, hi int64) fastEncoder {
	return func(dst, raw []byte) ([]byte, bool) {
		s := raw
		if raw[0] == '"' {
			var ok bool
			if s, ok = plainString(raw); !ok {
				return dst, false
			}
		}
		n, ok := parseInt(s)
		if !ok || n < lo || n > hi {
			return dst, false
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(size))
		switch size {
		case 2:
			return binary.BigEndian.AppendUint16(dst, uint16(n)), true
		case 4:
			return binary.BigEndian.AppendUint32(dst, uint32(n)), true
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)), true
	}
}

func boolFast(dst, raw []byte) ([]byte, bool) {
	var b byte
	switch string(raw) {
	case "true":
		b = 1
	case "false":
	default:
		return dst, false
	}
	return append(binary.BigEndian.AppendUint32(dst, 1), b), true
}

// textFast: as textConv, a string's content or another value's JSON text,
// valid UTF-8 without NUL, at most limit characters.
func textFast(limit int) fastEncoder {
	return func(dst, raw []byte) ([]byte, bool) {
		s := raw
		if raw[0] == '"' {
			var ok bool
			if s, ok = plainString(raw); !ok {
				return dst, false
			}
		}
		if !utf8.Valid(s) || bytes.IndexByte(s, 0) >= 0 || limit >= 0 && utf8.RuneCount(s) > limit {
			return dst, false
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
		return append(dst, s...), true
	}
}

// jsonFast: as jsonConv, the value's JSON text (jsonb: after its format
// version, 1).
func jsonFast(jsonb bool) fastEncoder {
	return func(dst, raw []byte) ([]byte, bool) {
		if !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\u0000`)) {
			return dst, false
		}
		if jsonb {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(raw)+1))
			dst = append(dst, 1)
		} else {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(raw)))
		}
		return append(dst, raw...), true
	}
}

// microsFromUnixToY2K: binary timestamps count microseconds from
// 2000-01-01 00:00 UTC.
const microsFromUnixToY2K = 946684800 * 1_000_000

// maxFastMillis bounds the epoch milliseconds the fast path takes: well
// inside PostgreSQL's range, so no range check is needed.
const maxFastMillis = 100_000_000_000_000

// timeFast: canonical RFC 3339 strings (YYYY-MM-DDTHH:MM:SS, an optional
// fraction of 1 to 9 digits, Z or +hh:mm) and epoch milliseconds of up to
// 14 digits; local (timestamp without time zone) keeps the wall clock and
// drops the offset, as timeConv does. Years 0000-9999 are all in range.
func timeFast(local bool) fastEncoder {
	return func(dst, raw []byte) ([]byte, bool) {
		var micros int64
		if raw[0] != '"' {
			ms, ok := parseInt(raw)
			if !ok || ms <= -maxFastMillis || ms >= maxFastMillis {
				return dst, false
			}
			micros = ms * 1000
		} else {
			secs, nanos, ok := parseRFC3339(raw[1:len(raw)-1], local)
			if !ok {
				return dst, false
			}
			micros = secs*1_000_000 + nanos/1000
		}
		dst = binary.BigEndian.AppendUint32(dst, 8)
		return binary.BigEndian.AppendUint64(dst, uint64(micros-microsFromUnixToY2K)), true
	}
}

// parseRFC3339 reads the canonical form of an RFC 3339 timestamp into
// seconds since the Unix epoch and nanoseconds (the offset applied unless
// wall). ok is false for anything else, valid or not.
func parseRFC3339(s []byte, wall bool) (secs, nanos int64, ok bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, 0, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, 0, false
	}
	rest := s[19:]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			nanos = nanos*10 + int64(rest[i]-'0')
			i++
		}
		n := i - 1
		if n < 1 || n > 9 {
			return 0, 0, false
		}
		for ; n < 9; n++ {
			nanos *= 10
		}
		rest = rest[i:]
	}
	var offset int64
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, 0, false
	}
	secs = daysFromCivil(year, month, day)*86400 + hour*3600 + minute*60 + sec
	if !wall {
		secs -= offset
	}
	return secs, nanos, true
}

func digits(b []byte) (int64, bool) {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func daysIn(month, year int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm; years here are 0 to 9999).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
