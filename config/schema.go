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
	enumType  = reflect.TypeFor[Enumerated]()
	interpRef = map[string]any{"$ref": "#/$defs/interpolated"}
	// What the loader takes for a scalar besides the value itself: an
	// empty value or none (the default), a ${VAR} reference.
	unset = []any{map[string]any{"const": ""}, map[string]any{"type": "null"}, interpRef}
	// Scalars are read as text, then parsed as the field's type.
	durPattern  = `^(0|([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+)$`
	sizePattern = `^ *[0-9]*\.?[0-9]+ *([kKmMgGtT][iI]?[bB]|[bB])? *$`
	intPattern  = `^[-+]?(0|[1-9][0-9]*)$`
	boolWords   = []any{"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}
)

// scalar is the schema of a scalar that is one of alts, or unset.
func scalar(alts ...any) map[string]any {
	return map[string]any{"anyOf": append(alts, unset...)}
}

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
	s := map[string]any{"type": []string{"object", "null"}, "properties": props, "additionalProperties": false}
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
		return scalar(map[string]any{"type": "string", "pattern": durPattern}, map[string]any{"const": 0})
	case t == byteSizeType:
		return scalar(map[string]any{"type": "integer", "minimum": 0}, map[string]any{"type": "string", "pattern": sizePattern})
	case spec.IsScalar(t) && t.Kind() == reflect.Bool:
		return scalar(map[string]any{"type": "boolean"}, map[string]any{"enum": boolWords})
	case spec.IsScalar(t) && t.Kind() == reflect.Float64:
		return scalar(map[string]any{"type": "number"}, map[string]any{"type": "string", "pattern": `^[-+]?[0-9.eE+-]+$`})
	case spec.IsScalar(t) && t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && !reflect.PointerTo(t).Implements(textUnmarshalerType):
		return scalar(map[string]any{"type": "integer"}, map[string]any{"type": "string", "pattern": intPattern})
	case spec.IsScalar(t):
		// A string, or a type that parses its own text: YAML's numbers and
		// booleans are text to the loader too.
		return map[string]any{"type": []string{"string", "number", "boolean", "null"}}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		// A single scalar is a list of one.
		item := map[string]any{"type": []string{"string", "number", "boolean"}}
		return map[string]any{"anyOf": []any{map[string]any{"type": "array", "items": item}, item, map[string]any{"type": "null"}}}
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": []string{"array", "null"}, "items": g.valueSchema(t.Elem(), section)}
	case t.Kind() == reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": map[string]any{"type": []string{"string", "number", "boolean"}}}
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
	// A type given by ${VAR} is known only when the file is loaded.
	alts = append(alts, map[string]any{"type": "object", "required": []string{"type"}, "properties": map[string]any{"type": interpRef}})
	names := kindNames(section)
	return map[string]any{"oneOf": alts, "description": section + " kinds of this build: " + strings.Join(names, ", ")}
}

// enum restricts s to values (or unset).
func enum(values []string, s map[string]any) map[string]any {
	s["anyOf"] = append([]any{map[string]any{"enum": values}}, unset...)
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
		if n, err := strconv.ParseInt(d, 10, 64); err == nil {
			return n
		}
	case t.Kind() == reflect.Float64:
		if f, err := strconv.ParseFloat(d, 64); err == nil {
			return f
		}
	}
	return d
}
