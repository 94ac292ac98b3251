package parquetfile

import (
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// orderedGroup is the root of the schema: a group whose fields keep the
// order of the configuration. parquet.Group is a map and sorts its fields by
// name, which would reorder the columns of the file.
type orderedGroup []parquet.Field

var _ parquet.Node = orderedGroup(nil)

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return parquet.NewSchema("schema", g.asGroup()).String() }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return g.asGroup().GoType() }
func (g orderedGroup) asGroup() parquet.Group {
	m := make(parquet.Group, len(g))
	for _, f := range g {
		m[f.Name()] = f
	}
	return m
}

// field is a named leaf of orderedGroup.
type field struct {
	parquet.Node
	name string
}

func (f field) Name() string { return f.name }

// Value is for writing Go values through reflection, which this package never
// does: it encodes the pages itself.
func (f field) Value(reflect.Value) reflect.Value { return reflect.Value{} }
