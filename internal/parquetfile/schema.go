package parquetfile

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/connector-dev/connector/internal/spec"
)

// Column is one column of the file: where its value is found in the JSON
// record value, and what it becomes.
type Column struct {
	// Name is the column name in the file.
	Name string `yaml:"name" doc:"column name in the Parquet file"`
	// Type is one of the Type* constants.
	Type string `yaml:"type" doc:"string | int32 | int64 | float | double | boolean | timestamp_ms | timestamp_us | date | bytes | json"`
	// Nullable columns take a missing field or a JSON null as a null value;
	// for the others, either makes the record bad.
	Nullable bool `yaml:"nullable" doc:"a missing field or JSON null is a null value (otherwise the record is bad)"`
	// Field is the dotted path of the value in the record ("user.id"); empty
	// means Name. A key that contains a dot cannot be addressed; a path
	// through a value that is not an object finds nothing (a missing field);
	// of a repeated key, the last counts.
	Field string `yaml:"field" doc:"dotted path of the value in the JSON record (default: name)"`
}

// Column types, and what JSON values each accepts:
//
//	string        a string
//	int32, int64  an integer number in range (no fraction, no exponent)
//	float, double a number (float: within float32 range)
//	boolean       true or false
//	timestamp_ms  an integer (milliseconds since 1970-01-01 UTC) or an RFC 3339
//	              string; stored as INT64 TIMESTAMP(MILLIS, UTC)
//	timestamp_us  the same in microseconds; INT64 TIMESTAMP(MICROS, UTC)
//	date          an integer (days since 1970-01-01) or "YYYY-MM-DD"; INT32 DATE
//	bytes         a base64 (standard, padded) string; BYTE_ARRAY
//	json          any value, stored as its raw JSON text; BYTE_ARRAY JSON
const (
	TypeString      = "string"
	TypeInt32       = "int32"
	TypeInt64       = "int64"
	TypeFloat       = "float"
	TypeDouble      = "double"
	TypeBoolean     = "boolean"
	TypeTimestampMS = "timestamp_ms"
	TypeTimestampUS = "timestamp_us"
	TypeDate        = "date"
	TypeBytes       = "bytes"
	TypeJSON        = "json"
)

var columnTypes = []string{TypeString, TypeInt32, TypeInt64, TypeFloat, TypeDouble, TypeBoolean,
	TypeTimestampMS, TypeTimestampUS, TypeDate, TypeBytes, TypeJSON}

// Compression codecs.
const (
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionGzip   = "gzip"
	CompressionNone   = "none"
)

// Schema is the configuration of a file: its columns, in file order, and the
// compression of its pages.
type Schema struct {
	Columns     []Column `yaml:"columns" doc:"the columns of the file, in order"`
	Compression string   `yaml:"compression" default:"zstd" enum:"zstd,snappy,gzip,none" doc:"zstd | snappy | gzip | none"`
}

// Validate reports every unusable value under its key ("columns[2].type").
// An empty Compression is zstd. No columns at all is left to the caller
// (a sink whose format is not parquet has none); NewWriter refuses it.
func (s *Schema) Validate(p *spec.Problems) {
	names := make(map[string]int, len(s.Columns))
	for i, c := range s.Columns {
		at := p.At(fmt.Sprintf("columns[%d]", i))
		at.Required("name", c.Name)
		if j, dup := names[c.Name]; dup && c.Name != "" {
			at.Add("name", "%q is also the name of columns[%d]", c.Name, j)
		} else {
			names[c.Name] = i
		}
		spec.OneOf(at, "type", "type", c.Type, columnTypes...)
		if path := c.path(); path != "" && strings.Contains("."+path+".", "..") {
			at.Add("field", "%q has an empty segment", path)
		}
	}
	if s.Compression != "" {
		spec.OneOf(p, "compression", "compression", s.Compression,
			CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone)
	}
}

// path is the dotted path of the column's value in the record.
func (c Column) path() string {
	if c.Field != "" {
		return c.Field
	}
	return c.Name
}

func (s *Schema) codec() compress.Codec {
	switch s.Compression {
	case CompressionSnappy:
		return &parquet.Snappy
	case CompressionGzip:
		return &parquet.Gzip
	case CompressionNone:
		return &parquet.Uncompressed
	}
	return &parquet.Zstd
}

func compressionName(c format.CompressionCodec) (string, error) {
	switch c {
	case format.Zstd:
		return CompressionZstd, nil
	case format.Snappy:
		return CompressionSnappy, nil
	case format.Gzip:
		return CompressionGzip, nil
	case format.Uncompressed:
		return CompressionNone, nil
	}
	return "", fmt.Errorf("compression %s", c)
}

// parquetSchema is the file's parquet-go schema: one leaf per column, in
// the order of Columns. It gives the footer's schema; the encodings of the
// leaves are not those of the pages (see column.go).
func (s *Schema) parquetSchema() *parquet.Schema {
	fields := make([]parquet.Field, len(s.Columns))
	for i, c := range s.Columns {
		n := leafNode(c.Type)
		if c.Nullable {
			n = parquet.Optional(n)
		} else {
			n = parquet.Required(n)
		}
		fields[i] = field{Node: n, name: c.Name}
	}
	return parquet.NewSchema("schema", orderedGroup(fields))
}

func leafNode(typ string) parquet.Node {
	switch typ {
	case TypeString:
		// No dictionary (column.go says how columns are encoded): on
		// records shaped like the bench's, zstd finds the repeats a
		// dictionary would, for less.
		return parquet.String()
	case TypeInt32:
		return parquet.Leaf(parquet.Int32Type)
	case TypeInt64:
		return parquet.Leaf(parquet.Int64Type)
	case TypeFloat:
		return parquet.Leaf(parquet.FloatType)
	case TypeDouble:
		return parquet.Leaf(parquet.DoubleType)
	case TypeBoolean:
		return parquet.Leaf(parquet.BooleanType)
	case TypeTimestampMS:
		return parquet.Timestamp(parquet.Millisecond)
	case TypeTimestampUS:
		return parquet.Timestamp(parquet.Microsecond)
	case TypeDate:
		return parquet.Date()
	case TypeBytes:
		return parquet.Leaf(parquet.ByteArrayType)
	case TypeJSON:
		return parquet.JSON()
	}
	panic(fmt.Sprintf("parquetfile: unchecked column type %q", typ))
}
