package postgres

import (
	"math/big"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestConvertersRefuseWhatTheColumnCannotHold: what the server would refuse
// in COPY is refused here, so it becomes a bad record (the policy applies)
// instead of a failed transaction.
func TestConvertersRefuseWhatTheColumnCannotHold(t *testing.T) {
	numeric52 := int32(5<<16|2) + 4
	for _, tc := range []struct {
		oid    uint32
		typmod int32
		raw    string
		ok     bool
	}{
		{pgtype.NumericOID, numeric52, `123.45`, true},
		{pgtype.NumericOID, numeric52, `999.994`, true},
		{pgtype.NumericOID, numeric52, `999.995`, false}, // rounds to 1000.00
		{pgtype.NumericOID, numeric52, `1234.5`, false},
		{pgtype.NumericOID, numeric52, `"Infinity"`, false},
		{pgtype.NumericOID, numeric52, `"NaN"`, true},
		{pgtype.NumericOID, numeric52, `-0.001`, true},
		{pgtype.NumericOID, -1, `1e300`, true},
		{pgtype.TextOID, -1, `"a\ud800b"`, true}, // a lone surrogate decodes to U+FFFD: valid
		{pgtype.TextOID, -1, "\"\xff\"", false},
		{pgtype.JSONBOID, -1, "{\"a\":\"\xff\"}", false},
		{pgtype.TimestamptzOID, -1, `"2026-11-30T12:00:00Z"`, true},
		{pgtype.TimestamptzOID, -1, `9223372036854775807`, false},
		{pgtype.DateOID, -1, `"2026-11-30"`, true},
		{pgtype.Int2OID, -1, `40000`, false},
		{pgtype.Float4OID, -1, `1e39`, false},
	} {
		conv, why := converterFor(tc.oid, tc.typmod)
		if why != "" {
			t.Fatal(why)
		}
		_, err := conv([]byte(tc.raw))
		if (err == nil) != tc.ok {
			t.Errorf("oid %d typmod %d %s: err %v, want ok %v", tc.oid, tc.typmod, tc.raw, err, tc.ok)
		}
	}
	if d := intDigits(big.NewInt(99995), -3, 2); d != 3 {
		t.Errorf("intDigits(99.995, scale 2) = %d, want 3 (100.00)", d)
	}
}
