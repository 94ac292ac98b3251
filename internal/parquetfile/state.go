package parquetfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// State is what a new process needs to continue a file: small enough to be
// stored with every checkpoint, and JSON-serialisable. It covers the row
// groups returned by FlushRowGroup so far, never buffered rows.
type State struct {
	// Size is the number of bytes of the file produced so far; after a
	// crash the caller truncates the file to it before Resume.
	Size int64 `json:"size"`
	// Rows is the number of rows in those bytes.
	Rows int64 `json:"rows"`
	// Schema identifies the Parquet schema of the file (a hash), so that a
	// file is never continued with other columns.
	Schema string `json:"schema"`
	// RowGroups is the footer's metadata of each row group, thrift compact
	// encoded.
	RowGroups [][]byte `json:"row_groups,omitempty"`
}

// fingerprint identifies a Parquet schema.
func fingerprint(elems []format.SchemaElement) (string, error) {
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &format.FileMetaData{Schema: elems})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// decodeGroups decodes and checks the row groups of st: they must be
// contiguous from the magic to st.Size, in order, and hold st.Rows rows.
func decodeGroups(st State, columns int) ([]format.RowGroup, error) {
	if st.Size == 0 {
		if len(st.RowGroups) > 0 || st.Rows != 0 {
			return nil, fmt.Errorf("%w: size 0 with %d row groups and %d rows", ErrBadState, len(st.RowGroups), st.Rows)
		}
		return nil, nil
	}
	groups := make([]format.RowGroup, len(st.RowGroups))
	proto := new(thrift.CompactProtocol)
	next, rows := int64(len(magic)), int64(0)
	for i, b := range st.RowGroups {
		rg := &groups[i]
		if err := thrift.Unmarshal(proto, b, rg); err != nil {
			return nil, fmt.Errorf("%w: row group %d: %v", ErrBadState, i, err)
		}
		if len(rg.Columns) != columns || int(rg.Ordinal) != i {
			return nil, fmt.Errorf("%w: row group %d: %d columns, ordinal %d", ErrBadState, i, len(rg.Columns), rg.Ordinal)
		}
		start, end := extent(rg)
		if start != next {
			return nil, fmt.Errorf("%w: row group %d starts at %d, want %d", ErrBadState, i, start, next)
		}
		next, rows = end, rows+rg.NumRows
	}
	if next != st.Size || rows != st.Rows {
		return nil, fmt.Errorf("%w: row groups end at %d with %d rows, state says size %d, %d rows",
			ErrBadState, next, rows, st.Size, st.Rows)
	}
	return groups, nil
}
