package parquetfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/connector-dev/connector/internal/spec"
)

// Writer produces the bytes of one Parquet file. See the package comment for
// the order of calls. Not safe for concurrent use.
type Writer struct {
	schema   Schema
	nullable []bool
	types    []colType
	scan     *scanner
	meta     format.FileMetaData // footer template: version, schema, created by, column orders
	schemaID string

	cols    []*column
	chunks  []chunk // of the current row group, one per column
	enc     pageEncoder
	cells   []cell // the record being converted
	scratch []byte // unescaped strings and decoded bytes of the record being converted

	pending  int64 // rows in the current row group
	buffered int

	size    int64
	rows    int64
	groups  []format.RowGroup
	encoded [][]byte // groups, thrift compact encoded, for State

	err  error // sticky: an encoding failure leaves the Writer unusable
	done bool  // Footer was returned
}

// NewWriter returns a Writer for a new, empty file. The Schema must be
// valid (see Validate); an empty Compression is zstd.
func NewWriter(s Schema) (*Writer, error) {
	if len(s.Columns) == 0 {
		return nil, fmt.Errorf("%w: a parquet schema needs at least one column", spec.ErrInvalid)
	}
	if err := spec.Check(&s); err != nil {
		return nil, err
	}
	if s.Compression == "" {
		s.Compression = CompressionZstd
	}
	s.Columns = slices.Clone(s.Columns)
	w := &Writer{
		schema:   s,
		nullable: make([]bool, len(s.Columns)),
		types:    make([]colType, len(s.Columns)),
		scan:     newScanner(s.Columns),
		cols:     make([]*column, len(s.Columns)),
		chunks:   make([]chunk, len(s.Columns)),
		cells:    make([]cell, len(s.Columns)),
		enc:      pageEncoder{codec: s.codec()},
	}
	for i, c := range s.Columns {
		w.nullable[i] = c.Nullable
		w.types[i] = typeOf(c.Type)
		w.cols[i] = newColumn(c.Type, c.Nullable)
	}
	// The footer of an empty file written by parquet-go is the template of
	// every footer: parquet-go turns the schema into the footer's form.
	var empty bytes.Buffer
	pw := parquet.NewGenericWriter[any](&empty, s.parquetSchema())
	if err := pw.Close(); err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	md, _, err := readFooter(empty.Bytes())
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	w.meta = format.FileMetaData{
		Version:      md.Version,
		Schema:       md.Schema,
		CreatedBy:    md.CreatedBy,
		ColumnOrders: md.ColumnOrders,
	}
	if w.schemaID, err = fingerprint(md.Schema); err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	return w, nil
}

// Resume returns a Writer that continues the file described by st, which
// the caller has truncated to st.Size bytes. The Schema must produce the
// same Parquet schema as the one st was taken with; otherwise, or if st is
// inconsistent, the error wraps ErrBadState. The file keeps the compression
// it was started with (parquet-go's reader decodes a whole column with the
// codec of its first chunk); a new Compression applies from the next file.
func Resume(s Schema, st State) (*Writer, error) {
	if err := spec.Check(&s); err != nil {
		return nil, err
	}
	groups, err := decodeGroups(st, len(s.Columns))
	if err != nil {
		return nil, err
	}
	if len(groups) > 0 {
		codec := groups[0].Columns[0].MetaData.Codec
		if s.Compression, err = compressionName(codec); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadState, err)
		}
	}
	w, err := NewWriter(s)
	if err != nil {
		return nil, err
	}
	if st.Schema != w.schemaID {
		return nil, fmt.Errorf("%w: written with another schema (%s, now %s)", ErrBadState, st.Schema, w.schemaID)
	}
	w.groups = groups
	w.encoded = slices.Clone(st.RowGroups)
	w.size, w.rows = st.Size, st.Rows
	return w, nil
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("parquet file already has its footer")
	}
	return nil
}

// Append converts one JSON record value to a row and buffers it. If the
// value does not fit the Schema the error wraps ErrBadRecord and nothing is
// buffered. value is not retained.
func (w *Writer) Append(value []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.scan.scan(value); err != nil {
		return err
	}
	// Every column converts before any takes its value, so that a bad
	// value leaves the columns as they were.
	w.scratch = w.scratch[:0]
	for c, raw := range w.scan.raw {
		v := &w.cells[c]
		v.null = raw == nil || raw[0] == 'n' // absent or null
		switch {
		case !v.null && w.types[c] == tString && raw[0] == '"' && !w.scan.escaped[c]:
			v.b = raw[1 : len(raw)-1] // most values of most records: no call
		case !v.null:
			if err := w.convert(c, raw, v); err != nil {
				return err
			}
		case !w.nullable[c]:
			what := "missing"
			if raw != nil {
				what = "null"
			}
			return fmt.Errorf("%w: column %q: field %q is %s", ErrBadRecord,
				w.schema.Columns[c].Name, w.schema.Columns[c].path(), what)
		}
	}
	for c, col := range w.cols {
		n, ok := col.add(&w.cells[c])
		if !ok {
			// The chunk's dictionary is full: its pages so far keep it, the
			// rest of the column goes without.
			if err := w.enc.flush(col, &w.chunks[c]); err != nil {
				w.err = fmt.Errorf("encode page: %w", err)
				return w.err
			}
			n, _ = col.add(&w.cells[c])
		}
		w.buffered += n
		if col.estimate >= pageSize {
			if err := w.enc.flush(col, &w.chunks[c]); err != nil {
				w.err = fmt.Errorf("encode page: %w", err)
				return w.err
			}
		}
	}
	w.pending++
	return nil
}

// Buffered is the estimated size of the buffered rows, plain encoded and
// uncompressed (what FlushRowGroup will write is usually smaller).
func (w *Writer) Buffered() int { return w.buffered }

// FlushRowGroup encodes the buffered rows as one row group and returns the
// bytes to append to the file: after the bytes of every earlier call, with
// the magic in front for the first. It returns nothing when no row is
// buffered. An error here is not about a record: the Writer is then
// unusable, and the file continues (from the last State) with Resume.
func (w *Writer) FlushRowGroup() ([]byte, error) { return w.AppendRowGroup(nil) }

// AppendRowGroup is FlushRowGroup appending the bytes to dst (a sink's
// buffer of the file's bytes), which it grows once if it must; on error
// dst is returned as it was.
func (w *Writer) AppendRowGroup(dst []byte) ([]byte, error) {
	if err := w.usable(); err != nil {
		return dst, err
	}
	if w.pending == 0 {
		return dst, nil
	}
	out, err := w.encodeRowGroup(dst)
	if err != nil {
		w.err = fmt.Errorf("row group %d: %w", len(w.groups), err)
		return dst, w.err
	}
	return out, nil
}

func (w *Writer) encodeRowGroup(dst []byte) ([]byte, error) {
	if len(w.groups) > math.MaxInt16 {
		return nil, errors.New("too many row groups in one file")
	}
	at := w.size
	if at == 0 {
		at = int64(len(magic))
	}
	rg := format.RowGroup{
		Columns:    make([]format.ColumnChunk, len(w.cols)),
		NumRows:    w.pending,
		FileOffset: at,
		Ordinal:    int16(len(w.groups)),
	}
	for i, col := range w.cols {
		ch := &w.chunks[i]
		if err := w.enc.flush(col, ch); err != nil {
			return nil, err
		}
		if err := w.enc.flushDict(col, ch); err != nil {
			return nil, err
		}
		if ch.values != w.pending {
			return nil, fmt.Errorf("column %d has %d values, want %d", i, ch.values, w.pending)
		}
		rg.Columns[i] = w.enc.metadata(col, ch, w.schema.Columns[i].Name, at)
		rg.TotalByteSize += ch.uncompressed
		rg.TotalCompressedSize += int64(len(ch.dictPage) + len(ch.pages))
		at += int64(len(ch.dictPage) + len(ch.pages))
	}
	out := slices.Grow(dst, int(at-w.size))
	if w.size == 0 {
		out = append(out, magic...)
	}
	for i := range w.chunks {
		ch := &w.chunks[i]
		out = append(append(out, ch.dictPage...), ch.pages...)
		*ch = chunk{dictPage: ch.dictPage[:0], pages: ch.pages[:0]}
		w.cols[i].st = colStats{}
	}
	enc, err := thrift.Marshal(new(thrift.CompactProtocol), &rg)
	if err != nil {
		return nil, err
	}
	w.groups = append(w.groups, rg)
	w.encoded = append(w.encoded, enc)
	w.size += int64(len(out) - len(dst))
	w.rows += rg.NumRows
	w.pending, w.buffered = 0, 0
	return out, nil
}

// State describes the bytes returned by FlushRowGroup so far; rows still
// buffered are not in it, so a checkpoint flushes first. The State shares
// no mutable memory with the Writer.
func (w *Writer) State() State {
	return State{
		Size:      w.size,
		Rows:      w.rows,
		Schema:    w.schemaID,
		RowGroups: slices.Clone(w.encoded),
	}
}

// Footer returns the last bytes of the file (the magic first too when no
// row group was written). It flushes nothing: rows still buffered are an
// error. After it the Writer takes no more calls but State.
func (w *Writer) Footer() ([]byte, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	if w.pending > 0 {
		return nil, fmt.Errorf("footer with %d rows buffered: FlushRowGroup first", w.pending)
	}
	md := w.meta
	md.NumRows = w.rows
	md.RowGroups = w.groups
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return nil, fmt.Errorf("encode footer: %w", err)
	}
	var out []byte
	if w.size == 0 {
		out = append(out, magic...)
	}
	out = append(out, b...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
	out = append(out, magic...)
	w.size += int64(len(out))
	w.done = true
	return out, nil
}
