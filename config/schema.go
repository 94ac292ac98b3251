package config

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/connector-dev/connector/internal/spec"
)

// SchemaID is the $id of Schema's document.
const SchemaID = "https://connector.dev/schema/config.json"

// Enumerated is implemented by string types whose values are a fixed set
// (a field may also list them in an `enum:"a,b"` tag).
type Enumerated interface {
	Enum() []string
}

// Schema returns a JSON Schema (draft 2020-12) of a job's config file, for
// editors (yaml-language-server) and linters: every key of the core and of
// each registered kind, with its doc as description, its literal default,
// and no other keys (as the loader refuses unknown keys). It describes
// the file as written: any scalar may be a ${VAR} reference, and source:,
// sink: and each transform are one of the kinds this build registers. The
// loader stays the authority: it also checks values against each other.
func Schema() map[string]any {
	g := &schemaGen{defs: map[string]any{"interpolated": map[string]any{
		"type": "string", "pattern": `\$\{`,
		"description": "a ${VAR} or ${VAR:-default} reference, expanded from the environment before the value is read",
	}}, building: map[reflect.Type]bool{}}
	root := g.object(reflect.TypeFor[Job]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "connector job"
	root["$defs"] = g.defs
	return root
}

// schemaGen builds one Schema; a struct type that contains itself (a
// filter's conditions) goes to $defs and is referenced.
type schemaGen struct {
	defs     map[string]any
	building map[reflect.Type]bool // struct types being built; true once met inside themselves
}

var (
	enumType   = reflect.TypeFor[Enumerated]()
	interpRef  = map[string]any{"$ref": "#/$defs/interpolated"}
	durPattern = `^(0|([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+)$`
	sizePatt   = `^[0-9]*\.?[0-9]+ *([kKmMgGtT][iI]?)?[bB]?$`
)

// object is the schema of struct type t: its keys, no others.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	name := t.PkgPath() + "." + t.Name()
	name = strings.NewReplacer("/", ".", "github.com.connector-dev.connector.", "").Replace(name)
	ref := map[string]any{"$ref": "#/$defs/" + name}
	if _, ok := g.building[t]; ok {
		g.building[t] = true
		return ref
	}
	g.building[t] = false
	props := map[string]any{}
	g.addFields(t, props)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	recursive := g.building[t]
	delete(g.building, t)
	if recursive {
		g.defs[name] = s
		return ref
	}
	return s
}

// addFields puts the schema of every key of struct type t into props
// (inline structs contribute their own keys).
func (g *schemaGen) addFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		switch {
		case !sf.IsExported() || name == "-":
		case name == "" && strings.Contains(opts, "inline") && sf.Type.Kind() == reflect.Struct:
			g.addFields(sf.Type, props)
		case name != "":
			s := g.valueSchema(sf.Type, sf.Tag.Get("kind"))
			if d := sf.Tag.Get("doc"); d != "" {
				s["description"] = d
			}
			if e := sf.Tag.Get("enum"); e != "" {
				s = enum(strings.Split(e, ","), s)
			}
			if d := sf.Tag.Get("default"); d != "" && !strings.HasPrefix(d, "@") {
				s["default"] = literal(sf.Type, d)
			}
			props[name] = s
		}
	}
}

// valueSchema is the schema of a value of type t; section names the kinds
// of a Plugin (or of a list of them).
func (g *schemaGen) valueSchema(t reflect.Type, section string) map[string]any {
	switch {
	case t == pluginType:
		return g.plugins(section)
	case t.Implements(enumType):
		return enum(reflect.Zero(t).Interface().(Enumerated).Enum(), map[string]any{})
	case t == durationType:
		return map[string]any{"anyOf": []any{map[string]any{"type": "string", "pattern": durPattern}, map[string]any{"const": 0}, interpRef}}
	case t == byteSizeType:
		return map[string]any{"anyOf": []any{map[string]any{"type": "integer", "minimum": 0}, map[string]any{"type": "string", "pattern": sizePatt}, interpRef}}
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return map[string]any{"type": []string{"string", "boolean", "number"}} // any scalar: the type parses it
	case spec.IsScalar(t) && t.Kind() == reflect.Bool:
		return map[string]any{"anyOf": []any{map[string]any{"type": "boolean"}, interpRef}}
	case spec.IsScalar(t) && (t.Kind() == reflect.Float64):
		return map[string]any{"anyOf": []any{map[string]any{"type": "number"}, interpRef}}
	case spec.IsScalar(t) && t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, interpRef}}
	case spec.IsScalar(t):
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		// A single string is a list of one.
		return map[string]any{"anyOf": []any{map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, map[string]any{"type": "string"}}}
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": "array", "items": g.valueSchema(t.Elem(), section)}
	case t.Kind() == reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	case t.Kind() == reflect.Pointer:
		return g.valueSchema(t.Elem(), section)
	case t.Kind() == reflect.Struct:
		return g.object(t)
	}
	return map[string]any{} // an interface: any YAML value
}

// plugins is the schema of a section configured by a kind of section: one
// of the registered kinds, each its type beside its own keys.
func (g *schemaGen) plugins(section string) map[string]any {
	var alts []any
	for _, k := range Kinds(section) {
		s := g.object(reflect.TypeOf(k.New()).Elem())
		props := s["properties"].(map[string]any)
		props["type"] = map[string]any{"const": k.Name, "description": k.Summary}
		if !k.Default {
			s["required"] = []string{"type"}
		}
		alts = append(alts, s)
	}
	names := kindNames(section)
	return map[string]any{"oneOf": alts, "description": section + " kinds of this build: " + strings.Join(names, ", ")}
}

// enum restricts s to values (or a ${VAR} reference).
func enum(values []string, s map[string]any) map[string]any {
	s["anyOf"] = []any{map[string]any{"enum": values}, interpRef}
	return s
}

// literal is a default tag's value as JSON.
func literal(t reflect.Type, d string) any {
	switch {
	case t == durationType || t == byteSizeType:
		return d
	case t.Kind() == reflect.Bool:
		if b, err := strconv.ParseBool(d); err == nil {
			return b
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		if n, err := strconv.ParseInt(d, 0, 64); err == nil {
			return n
		}
	case t.Kind() == reflect.Float64:
		if f, err := strconv.ParseFloat(d, 64); err == nil {
			return f
		}
	}
	return d
}
