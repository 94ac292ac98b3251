package spec

// NullValue is the type of Null.
type NullValue struct{}

// Null is what the config loader puts in a field of interface type (any)
// whose key the file gives with a null value (`value: null`, `value: ~`,
// `value:`), so that its component can tell "null" from an absent key,
// which leaves the field nil. It writes itself back as null.
var Null = NullValue{}

// IsZero is false: a null given in the file is written back by a dump.
func (NullValue) IsZero() bool { return false }

// MarshalYAML writes null.
func (NullValue) MarshalYAML() (any, error) { return nil, nil }

// MarshalJSON writes null.
func (NullValue) MarshalJSON() ([]byte, error) { return []byte("null"), nil }
