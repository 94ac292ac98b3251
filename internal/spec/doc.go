// Package spec is how a component describes its configuration struct, once:
// the YAML key of each field (its `yaml` tag), its default (a `default`
// tag), what it means (a `doc` tag) and its checks (a Validate method that
// reports Problems). The config loader decodes a file into such structs,
// fills the defaults with Fill and calls Validate; a component built in
// code (tests) fills and checks the same struct the same way. So a default
// is written in exactly one place: the tag beside the field.
//
// It owns the tag grammar and the Problems collector. It does not read
// files, know about YAML nodes or lines (package config does), or know any
// component.
//
// # Tags
//
//	Interval time.Duration `yaml:"interval" default:"1s" doc:"how often a checkpoint is triggered"`
//	ClientID string        `yaml:"client_id" default:"@name" doc:"..."`
//
// A default is written as it would be in the YAML file: "1s", "128MiB",
// "5", "true", "earliest". A default starting with '@' is the value of
// another key of the same document, by its full dotted path ("@name",
// "@checkpoint.interval"), taken after every literal default was filled.
// Field types are strings (and string kinds), ints, bools, time.Duration,
// and any type implementing encoding.TextUnmarshaler. Integers are decimal,
// without a leading zero (ErrLeadingZero).
//
// Struct fields are walked recursively: a nested struct is a nested key; a
// field tagged `yaml:",inline"` shares its parent's key; an interface or
// pointer field is walked into if it holds a pointer to a struct (the
// config of a registered kind); a slice of structs is walked element by
// element (key "list[2]").
package spec
