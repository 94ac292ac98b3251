package spec

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Field is one key of a config struct, as the tags describe it.
type Field struct {
	Key     string        // full dotted path from the walked root
	Default string        // the `default` tag, "" if none
	Doc     string        // the `doc` tag
	Value   reflect.Value // addressable
	parent  reflect.Value // the struct holding it
}

// RefKey is the key whose value f's "@" default copies (see the package
// documentation), in full under the same root as f.Key, whose own path is
// prefix: "@key" a sibling of f, "@/key" a key from the root. ok is false
// when f's default is no reference.
func (f Field) RefKey(prefix string) (key string, ok bool) {
	ref, ok := strings.CutPrefix(f.Default, "@")
	if !ok {
		return "", false
	}
	if abs, ok := strings.CutPrefix(ref, "/"); ok {
		return Join(prefix, abs), true
	}
	return Join(f.Key[:max(0, strings.LastIndex(f.Key, "."))], ref), true
}

// Fields lists every key of the struct v points to (recursively, see the
// package documentation), with paths under prefix.
func Fields(v any, prefix string) []Field {
	var out []Field
	walk(reflect.ValueOf(v), prefix, func(f Field) { out = append(out, f) })
	return out
}

func walk(v reflect.Value, path string, visit func(Field)) {
	forFields(v, path, func(sf reflect.StructField, parent, fv reflect.Value, key string) {
		doc := sf.Tag.Get("doc")
		switch {
		case key == path: // inline
			walk(fv, path, visit)
		case leaf(fv.Type()):
			visit(Field{Key: key, Default: sf.Tag.Get("default"), Doc: doc, Value: fv, parent: parent})
		case fv.Kind() == reflect.Slice:
			visit(Field{Key: key, Doc: doc, Value: fv, parent: parent})
			if elem := fv.Type().Elem(); elem.Kind() == reflect.Struct || elem.Kind() == reflect.Interface || elem.Kind() == reflect.Pointer {
				for j := range fv.Len() {
					walk(fv.Index(j).Addr(), fmt.Sprintf("%s[%d]", key, j), visit)
				}
			}
		default:
			visit(Field{Key: key, Doc: doc, Value: fv, parent: parent})
			walk(fv, key, visit)
		}
	})
}

// forFields calls fn for each exported field of the struct v holds (through
// pointers and interfaces) that has a YAML key, with that key under path;
// an inline field gets path itself.
func forFields(v reflect.Value, path string, fn func(sf reflect.StructField, parent, fv reflect.Value, key string)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		switch {
		case !sf.IsExported() || name == "-":
		case name == "" && strings.Contains(opts, "inline"):
			fn(sf, v, v.Field(i), path)
		case name != "":
			fn(sf, v, v.Field(i), Join(path, name))
		}
	}
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	unmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// leaf reports whether values of t are set from one scalar.
func leaf(t reflect.Type) bool {
	if t == durationType || reflect.PointerTo(t).Implements(unmarshalType) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Bool, reflect.Float64:
		return true
	}
	return false
}

// Fill sets every field of the struct v points to that has a default, is
// zero, and whose key set reports absent (set nil: every key is absent, so
// zero means unset). Keys are full dotted paths under prefix, the path of v
// in its document (e.g. "sink" for a sink's config, "" for a whole job).
// Literal defaults go first, then '@' references (see the package
// documentation): "@key" names a sibling key of the same struct, "@/key" a
// key from v's root. Then it calls MarkFilled on every struct of the tree
// that is a Filler. It returns an error only for a malformed tag: a bug.
func Fill(v any, prefix string, set func(key string) bool) error {
	if set == nil {
		set = func(string) bool { return false }
	}
	fields := Fields(v, prefix)
	var refs []Field
	for _, f := range fields {
		if f.Default == "" || set(f.Key) || !f.Value.IsZero() {
			continue
		}
		if strings.HasPrefix(f.Default, "@") {
			refs = append(refs, f)
			continue
		}
		if err := SetScalar(f.Value, f.Default); err != nil {
			return fmt.Errorf("spec: default of %s (%q): %w", f.Key, f.Default, err)
		}
	}
	for _, f := range refs {
		ref := strings.TrimPrefix(f.Default, "@")
		from := f.parent
		if abs, ok := strings.CutPrefix(ref, "/"); ok {
			from, ref = reflect.ValueOf(v), abs
		}
		src, ok := lookup(from, ref)
		if !ok || src.Type() != f.Value.Type() {
			return fmt.Errorf("spec: default of %s refers to %q, not a key of the same type", f.Key, f.Default)
		}
		f.Value.Set(src)
	}
	eachStruct(reflect.ValueOf(v), prefix, func(_ string, s reflect.Value) {
		if f, ok := s.Addr().Interface().(Filler); ok {
			f.MarkFilled()
		}
	})
	return nil
}

// Filler is implemented by a config struct that remembers that Fill has
// run on it. A component whose constructor fills its Config (zero meaning
// unset, for a Config built in code) skips a Config already filled, which
// the config layer filled from a file, where a key written as 0 stays 0
// ("roll_age: 0": never by age), and filling again would make it the
// default.
type Filler interface {
	MarkFilled()
}

// lookup finds the value of a dotted key below v.
func lookup(v reflect.Value, key string) (reflect.Value, bool) {
	for part := range strings.SplitSeq(key, ".") {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		found := false
		for _, f := range Fields(v.Addr().Interface(), "") {
			if f.Key == part {
				v, found = f.Value, true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// SetScalar converts s into v's type (see the package documentation for
// the types) and stores it; v must be settable.
func SetScalar(v reflect.Value, s string) error {
	t := v.Type()
	if reflect.PointerTo(t).Implements(unmarshalType) {
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	switch {
	case t == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case t.Kind() == reflect.String:
		v.SetString(s)
	case v.CanInt():
		n, err := parseInt(s, t.Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case v.CanUint():
		if err := CheckLeadingZero(s); err != nil {
			return err
		}
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return err
		}
		v.SetUint(n)
	case t.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	default:
		return fmt.Errorf("no scalar conversion for %v", t)
	}
	return nil
}

// ErrLeadingZero classes the error of SetScalar for an integer written
// with a leading zero ("010"): octal to some YAML readers (and to Go's
// base prefixes), decimal to YAML 1.2, so refused rather than read as
// either.
var ErrLeadingZero = errors.New("a leading 0 is ambiguous (octal to some YAML readers, decimal to others): write the number without it")

// parseInt reads a decimal integer (an optional sign, then digits); no
// base prefix (0x, 0o, 0b), no '_', no leading zero.
func parseInt(s string, bits int) (int64, error) {
	if err := CheckLeadingZero(s); err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, bits)
}

// CheckLeadingZero refuses an integer with digits after a leading zero
// (ErrLeadingZero).
func CheckLeadingZero(s string) error {
	digits := strings.TrimLeft(s, "+-")
	if len(digits) > 1 && digits[0] == '0' && digits[1] >= '0' && digits[1] <= '9' {
		return fmt.Errorf("%q: %w", s, ErrLeadingZero)
	}
	return nil
}

// IsScalar reports whether values of t are set from one scalar (see the
// package documentation for the types).
func IsScalar(t reflect.Type) bool { return leaf(t) }
