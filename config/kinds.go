package config

import (
	"fmt"

	"github.com/connector-dev/connector/internal/registry"
)

// Kind is a registered kind of a pluggable section: a source, a sink or a
// transform. Packages that implement a kind register it from an init
// function (through sink.Register, source.Register or transform.Register,
// which also keep its constructor); the config layer only needs its name and
// how to make its config struct.
type Kind struct {
	// Section is where the kind is used: SectionSource, SectionSink or
	// SectionTransform.
	Section string
	// Name is the kind's "type" in the file.
	Name string
	// Summary is one line for help and `connector kinds`.
	Summary string
	// Default makes this kind the section's type when the file gives none
	// (the kafka source: `source:` needs no type).
	Default bool
	// New returns a pointer to a new, zero config struct of the kind. Its
	// fields carry `yaml`, `default` and `doc` tags (package internal/spec);
	// it may implement spec.Validator and JobValidator.
	New func() any
}

// The pluggable sections.
const (
	SectionSource    = "source"
	SectionSink      = "sink"
	SectionTransform = "transform"
)

// sections holds the registered kinds, by section.
var sections = map[string]*registry.Of[Kind]{
	SectionSource:    {What: "source kind"},
	SectionSink:      {What: "sink kind"},
	SectionTransform: {What: "transform kind"},
}

// RegisterKind adds a kind. Registering a name twice in a section, a second
// default, or a kind of an unknown section, is a bug and panics.
func RegisterKind(k Kind) {
	sec, ok := sections[k.Section]
	if !ok || k.Name == "" || k.New == nil {
		panic(fmt.Sprintf("config: kind %q of section %q is incomplete", k.Name, k.Section))
	}
	if d, has := defaultKind(k.Section); k.Default && has {
		panic(fmt.Sprintf("config: %s kinds %q and %q are both the default", k.Section, d.Name, k.Name))
	}
	sec.Add(k.Name, k)
}

// LookupKind returns the kind registered under name in section.
func LookupKind(section, name string) (Kind, bool) {
	sec, ok := sections[section]
	if !ok {
		return Kind{}, false
	}
	return sec.Get(name)
}

// Kinds returns the kinds of a section, sorted by name.
func Kinds(section string) []Kind {
	var out []Kind
	for _, name := range kindNames(section) {
		k, _ := LookupKind(section, name)
		out = append(out, k)
	}
	return out
}

// kindNames lists the names of a section's kinds, sorted.
func kindNames(section string) []string {
	if sec, ok := sections[section]; ok {
		return sec.Names()
	}
	return nil
}

// defaultKind returns the section's default kind, if one is registered.
func defaultKind(section string) (Kind, bool) {
	for _, k := range Kinds(section) {
		if k.Default {
			return k, true
		}
	}
	return Kind{}, false
}
