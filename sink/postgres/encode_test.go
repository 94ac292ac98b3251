package postgres

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/connector-dev/connector/sink"
)

// TestFastEncodersAgreeWithTheConverters: a fast path takes only what the
// column's converter takes, and writes the bytes pgx writes for the
// converter's value; what it declines, the converter decides.
func TestFastEncodersAgreeWithTheConverters(t *testing.T) {
	e := &rowEncoder{types: pgtype.NewMap()}
	varchar3 := int32(3 + 4)
	for _, tc := range []struct {
		oid    uint32
		typmod int32
		raws   []string
	}{
		{pgtype.Int2OID, -1, []string{`0`, `-1`, `32767`, `32768`, `-32768`, `-32769`, `"12"`, `"+12"`, `1e3`, `12.0`, `12.5`, `"a"`, `"1\u0032"`, `007`}},
		{pgtype.Int4OID, -1, []string{`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `"-5"`, `-`, `""`}},
		{pgtype.Int8OID, -1, []string{`9223372036854775807`, `-9223372036854775808`, `9223372036854775808`, `123456789012345678`, `1234567890123456789`, `-0`, `true`}},
		{pgtype.BoolOID, -1, []string{`true`, `false`, `"true"`, `1`}},
		{pgtype.TextOID, -1, []string{`"abc"`, `""`, `"é✓"`, `"a\nb"`, `"a\u0000b"`, "\"\xff\"", `12`, `{"a":1}`, `true`}},
		{pgtype.VarcharOID, varchar3, []string{`"abc"`, `"abcd"`, `"éééé"`, `"ééé"`, `1234`}},
		{pgtype.BPCharOID, varchar3, []string{`"ab"`, `"abcd"`}},
		{pgtype.JSONOID, -1, []string{`{"a":1}`, `[1,2]`, `"s"`, `{"a":"\u0000"}`, "{\"a\":\"\xff\"}"}},
		{pgtype.JSONBOID, -1, []string{`{"a":1}`, `3`, `{"a":"\u0000"}`}},
		{pgtype.TimestamptzOID, -1, []string{
			`"2026-11-30T12:00:00Z"`, `"2026-11-30T12:00:00.123Z"`, `"2026-11-30T12:00:00.123456789Z"`, `"2026-11-30T12:00:00.1234567891Z"`,
			`"2026-11-30T12:00:00.1234567+05:30"`, `"2026-11-30T12:00:00-08:00"`, `"2024-02-29T00:00:00Z"`, `"2023-02-29T00:00:00Z"`,
			`"2026-13-01T00:00:00Z"`, `"2026-11-30T24:00:00Z"`, `"2026-11-30T12:00:60Z"`, `"2026-11-30T12:00:00+24:00"`, `"2026-11-30T12:00:00+23:59"`,
			`"2026-11-30t12:00:00z"`, `"2026-11-30T12:00:00"`, `"2026-11-30T12:00:00.Z"`, `"0000-01-01T00:00:00+01:00"`, `"9999-12-31T23:59:59.999999999-23:59"`,
			`"1969-12-31T23:59:59.9999995Z"`, `"1600-03-01T00:00:00Z"`, `"2026-11-30 12:00:00Z"`, `"2026-11-30T12:00:00,5Z"`,
			`0`, `1764504000000`, `-1764504000000`, `99999999999999`, `100000000000000`, `9223372036854775807`, `1.5`, `"x"`}},
		{pgtype.TimestampOID, -1, []string{
			`"2026-11-30T12:00:00Z"`, `"2026-11-30T12:00:00.5+05:30"`, `"2026-11-30T23:30:00-08:00"`, `"2026-11-30T12:00:00"`, `"2026-11-30T12:00:00.25"`,
			`1764504000000`, `-62135596800001`}},
		{pgtype.NumericOID, int32(5<<16|2) + 4, []string{`123.45`, `999.995`}},
		{pgtype.DateOID, -1, []string{`"2026-11-30"`, `"2026-02-30"`}},
	} {
		conv, why := converterFor(tc.oid, tc.typmod)
		if why != "" {
			t.Fatal(why)
		}
		fast := fastEncoderFor(tc.oid, tc.typmod)
		for _, raw := range tc.raws {
			prefix := []byte("prefix")
			v, convErr := conv([]byte(raw))
			var want []byte
			if convErr == nil {
				var err error
				if want, err = e.encodeValue(bytes.Clone(prefix), tc.oid, v); err != nil {
					t.Fatalf("oid %d %s: pgx cannot encode %#v: %v", tc.oid, raw, v, err)
				}
			}
			if fast == nil {
				continue
			}
			got, ok := fast(bytes.Clone(prefix), []byte(raw))
			switch {
			case !ok && !bytes.Equal(got, prefix):
				t.Errorf("oid %d %s: declined but wrote %x", tc.oid, raw, got)
			case ok && convErr != nil:
				t.Errorf("oid %d %s: fast path took what the converter refuses (%v)", tc.oid, raw, convErr)
			case ok && !bytes.Equal(got, want):
				t.Errorf("oid %d %s: fast path wrote %x, pgx %x", tc.oid, raw, got, want)
			}
		}
	}
}

// TestFastPathsTakeTheCommonShapes: the shapes the fast paths are for do
// not fall back to the converters.
func TestFastPathsTakeTheCommonShapes(t *testing.T) {
	for _, tc := range []struct {
		oid uint32
		raw string
	}{
		{pgtype.Int8OID, `-123456`},
		{pgtype.Int4OID, `"42"`},
		{pgtype.TextOID, `"hello, world"`},
		{pgtype.TimestamptzOID, `"2026-01-01T00:00:01.234Z"`},
		{pgtype.TimestamptzOID, `"2026-01-01T00:00:01+02:00"`},
		{pgtype.TimestamptzOID, `1764504000000`},
		{pgtype.JSONBOID, `{"a":[1,2]}`},
		{pgtype.BoolOID, `true`},
	} {
		if _, ok := fastEncoderFor(tc.oid, -1)(nil, []byte(tc.raw)); !ok {
			t.Errorf("oid %d %s: declined", tc.oid, tc.raw)
		}
	}
}

// TestARowRefusedInALaterCOPYSegmentIsNamed: the rows of a transaction go
// in several COPY statements; the server's line number is within the
// statement that failed.
func TestARowRefusedInALaterCOPYSegmentIsNamed(t *testing.T) {
	e := newEnv(t, ordersTable, `ALTER TABLE orders ADD CONSTRAINT small CHECK (id < 100000)`)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 100002)
	_, err := w.PreCommit(ctx, 1)
	if !errors.Is(err, sink.ErrLost) || !strings.Contains(err.Error(), "the record at in/0 offset 100000") {
		t.Fatalf("PreCommit: %v; want ErrLost naming the record", err)
	}
}
