// Package filefmt is what one output file of a sink holds (a part file, an
// object), format by format: records framed as lines (jsonl, raw: package
// recfmt) or the rows of a Parquet file (package internal/parquetfile),
// and the State that lets a file spanning checkpoints be continued, or
// closed, by another process after a crash. It owns no file: the sink
// appends the bytes it returns and decides when to flush and close.
package filefmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/parquetfile"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/recfmt"
)

// Parquet is the format name of Parquet files.
const Parquet = "parquet"

// Formats are the format names a sink can take.
var Formats = []string{recfmt.JSONL, recfmt.Raw, Parquet}

// ParquetConfig is a sink's parquet: section: the columns and compression
// of the files (a parquetfile.Schema) and the size of a row group.
type ParquetConfig struct {
	Columns     []parquetfile.Column `yaml:"columns,omitempty" doc:"the columns of the file, in order: name, type, nullable, field"`
	Compression string               `yaml:"compression" default:"zstd" enum:"zstd,snappy,gzip,none" doc:"zstd | snappy | gzip | none"`
	// RowGroupSize flushes a row group once the rows buffered reach it
	// (uncompressed); every checkpoint flushes one too.
	RowGroupSize config.ByteSize `yaml:"row_group_size" default:"32MiB" doc:"flush a row group at this many buffered bytes (uncompressed); every checkpoint flushes one too"`
}

// Schema is the Parquet schema of the files.
func (c ParquetConfig) Schema() parquetfile.Schema {
	return parquetfile.Schema{Columns: c.Columns, Compression: c.Compression}
}

// maxRowGroupSize bounds the rows a writer buffers in memory.
const maxRowGroupSize = config.GiB

// Validate checks the parquet: section of a sink whose format is format,
// under p (the sink's problems).
func (c *ParquetConfig) Validate(p *spec.Problems, format string) {
	if format != Parquet {
		if len(c.Columns) > 0 {
			p.Add("parquet", "columns are set but format is %q, not parquet", format)
		}
		return
	}
	at := p.At("parquet")
	if len(c.Columns) == 0 {
		at.Add("columns", "format: parquet needs at least one column")
	}
	schema := c.Schema()
	schema.Validate(at)
	spec.Positive(at, "row_group_size", c.RowGroupSize)
	spec.AtMost(at, "row_group_size", c.RowGroupSize, maxRowGroupSize)
}

// Ext is the file name extension of format.
func Ext(format string) string { return format }

// File is the content of one file being written.
type File interface {
	// Append takes one record value and returns dst with the bytes to
	// write now appended (none while a format buffers rows). A value the
	// format cannot hold wraps sink.ErrBadRecord and changes nothing.
	Append(dst, v []byte) ([]byte, error)
	// Buffered is how many bytes of records Append took and has not
	// returned yet.
	Buffered() int
	// Flush returns dst with the bytes of every buffered record appended.
	// A pre-commit flushes, writes them, and then records State.
	Flush(dst []byte) ([]byte, error)
	// Close returns dst with the file's last bytes appended (it flushes
	// first); the file is then complete and takes no more calls.
	Close(dst []byte) ([]byte, error)
	// State is what Resume needs to go on after the bytes returned so
	// far, nil for formats that need nothing (lines).
	State() *State
}

// State is a file's format state at a checkpoint, stored in the sink's
// committable.
type State struct {
	// Parquet is the Parquet writer's state, and Schema the columns it
	// was written with (to close the file if the config changed since).
	Parquet *parquetfile.State  `json:"parquet,omitempty"`
	Schema  *parquetfile.Schema `json:"schema,omitempty"`
}

// ErrSchemaChanged: the format, or the parquet columns or compression, of
// the config are not those a file was begun with; it cannot be continued,
// only closed (Finish).
var ErrSchemaChanged = errors.New("the format or parquet schema changed since the file was begun")

// New begins a file of format.
func New(format string, pc ParquetConfig) (File, error) {
	if format != Parquet {
		return &lines{format: format, sep: recfmt.Separator(format)}, nil
	}
	w, err := parquetfile.NewWriter(pc.Schema())
	if err != nil {
		return nil, err
	}
	return &parquetFile{w: w, schema: pc.Schema(), rowGroup: int(pc.RowGroupSize)}, nil
}

// Resume goes on with a file whose bytes were cut back to the size st
// recorded; name is the file's (or object's) name, whose extension says
// the format it was begun in. st is nil for lines. A file of another
// format than format is ErrSchemaChanged: jsonl lines and raw values
// would have gone on in one file (lines keep no state that says which).
func Resume(format string, pc ParquetConfig, st *State, name string) (File, error) {
	if begun := strings.TrimPrefix(path.Ext(name), "."); begun != "" && begun != format {
		return nil, fmt.Errorf("%w: a %s file cannot be continued as %s", ErrSchemaChanged, begun, format)
	}
	if format != Parquet {
		if st != nil && st.Parquet != nil {
			return nil, fmt.Errorf("%w: a parquet file cannot be continued as %s", ErrSchemaChanged, format)
		}
		return New(format, pc)
	}
	if st == nil || st.Parquet == nil || st.Schema == nil {
		return nil, fmt.Errorf("%w: the file has no parquet state", ErrSchemaChanged)
	}
	if !sameSchema(*st.Schema, pc.Schema()) {
		return nil, ErrSchemaChanged
	}
	w, err := parquetfile.Resume(pc.Schema(), *st.Parquet)
	if err != nil {
		return nil, err
	}
	return &parquetFile{w: w, schema: pc.Schema(), rowGroup: int(pc.RowGroupSize)}, nil
}

// Finish returns the last bytes of a file whose State is st, for a file no
// writer goes on with (its writer is gone after a rescale, its schema
// changed): the bytes are appended at st's size.
func Finish(st *State) ([]byte, error) {
	if st == nil || st.Parquet == nil {
		return nil, nil
	}
	if st.Schema == nil {
		return nil, fmt.Errorf("%w: the file's state has no schema", parquetfile.ErrBadState)
	}
	w, err := parquetfile.Resume(*st.Schema, *st.Parquet)
	if err != nil {
		return nil, err
	}
	return w.Footer()
}

func sameSchema(a, b parquetfile.Schema) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// lines is jsonl or raw: every record's bytes go out at once.
type lines struct {
	format  string
	sep     bool
	scratch bytes.Buffer
}

func (l *lines) Append(dst, v []byte) ([]byte, error) {
	body, err := recfmt.Encode(l.format, v, &l.scratch)
	if err != nil {
		return dst, err
	}
	dst = append(dst, body...)
	if l.sep {
		dst = append(dst, '\n')
	}
	return dst, nil
}

func (l *lines) Buffered() int                    { return 0 }
func (l *lines) Flush(dst []byte) ([]byte, error) { return dst, nil }
func (l *lines) Close(dst []byte) ([]byte, error) { return dst, nil }
func (l *lines) State() *State                    { return nil }

// parquetFile buffers rows and returns a row group at a time.
type parquetFile struct {
	w        *parquetfile.Writer
	schema   parquetfile.Schema
	rowGroup int
}

func (p *parquetFile) Append(dst, v []byte) ([]byte, error) {
	if err := p.w.Append(v); err != nil {
		if errors.Is(err, parquetfile.ErrBadRecord) {
			return dst, fmt.Errorf("%w: %w", sink.ErrBadRecord, err)
		}
		return dst, err
	}
	if p.w.Buffered() < p.rowGroup {
		return dst, nil
	}
	return p.Flush(dst)
}

func (p *parquetFile) Buffered() int { return p.w.Buffered() }

func (p *parquetFile) Flush(dst []byte) ([]byte, error) {
	dst, err := p.w.AppendRowGroup(dst)
	if err != nil {
		return dst, fmt.Errorf("parquet: %w", err)
	}
	return dst, nil
}

func (p *parquetFile) Close(dst []byte) ([]byte, error) {
	dst, err := p.Flush(dst)
	if err != nil {
		return dst, err
	}
	b, err := p.w.Footer()
	if err != nil {
		return dst, fmt.Errorf("parquet: %w", err)
	}
	return append(dst, b...), nil
}

func (p *parquetFile) State() *State {
	st := p.w.State()
	schema := p.schema
	return &State{Parquet: &st, Schema: &schema}
}
