package spec

import (
	"fmt"
	"reflect"
)

// Normalizer is implemented by config structs that put values into their
// canonical form before defaults are filled and checks run (for example,
// splitting a comma-separated list).
type Normalizer interface {
	Normalize()
}

// eachStruct calls fn for every struct in the tree under v (v itself
// included), depth first, parents before children, with its key path.
// Inline fields, interfaces and pointers holding structs, and slices of
// structs are followed as Fields follows them.
func eachStruct(v reflect.Value, path string, fn func(path string, v reflect.Value)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || !v.CanAddr() {
		return
	}
	fn(path, v)
	forFields(v, path, func(sf reflect.StructField, _, fv reflect.Value, key string) {
		switch {
		case leaf(sf.Type):
		case fv.Kind() == reflect.Slice:
			for j := range fv.Len() {
				eachStruct(fv.Index(j), fmt.Sprintf("%s[%d]", key, j), fn)
			}
		default:
			eachStruct(fv, key, fn)
		}
	})
}

// NormalizeAll calls Normalize on every struct of the tree under root (a
// pointer) that implements Normalizer.
func NormalizeAll(root any) {
	eachStruct(reflect.ValueOf(root), "", func(_ string, v reflect.Value) {
		if n, ok := v.Addr().Interface().(Normalizer); ok {
			n.Normalize()
		}
	})
}

// ValidateAll calls Validate on every struct of the tree under root (a
// pointer) that implements Validator, each reporting under its own key
// (prefix, then the path from root).
func ValidateAll(root any, prefix string, p *Problems) {
	eachStruct(reflect.ValueOf(root), "", func(path string, v reflect.Value) {
		if val, ok := v.Addr().Interface().(Validator); ok {
			val.Validate(p.At(Join(prefix, path)))
		}
	})
}
