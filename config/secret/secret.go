// Package secret is the Secret type of config values that must never be
// printed: passwords, secret keys. It is a package of its own so that
// packages the config package imports (connection settings shared by
// sections, package internal/s3conn) can hold one too; package config
// names it config.Secret.
package secret

import (
	"encoding/json"
	"strings"

	"github.com/rs/zerolog"
)

// Redacted is what a Secret prints as, however it is printed.
const Redacted = "***"

// Secret is a value that must not appear in logs, dumps or error messages:
// String, GoString, MarshalJSON, MarshalText, MarshalYAML and
// MarshalZerologObject all give "***". Only Value returns the secret itself;
// call it where the secret is used, nowhere else.
type Secret struct {
	v string
}

// New wraps s.
func New(s string) Secret { return Secret{v: s} }

// Value returns the secret itself.
func (s Secret) Value() string { return s.v }

// IsZero reports whether the secret is empty (for yaml's omitempty).
func (s Secret) IsZero() bool { return s.v == "" }

// String returns "***".
func (s Secret) String() string { return Redacted }

// GoString returns "***", so %#v does not print the secret either.
func (s Secret) GoString() string { return Redacted }

// MarshalJSON returns "***" as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(Redacted) }

// MarshalText returns "***".
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalYAML returns "***".
func (s Secret) MarshalYAML() (any, error) { return Redacted, nil }

// MarshalZerologObject logs the secret as {"secret":"***"}.
func (s Secret) MarshalZerologObject(e *zerolog.Event) { e.Str("secret", Redacted) }

var (
	_ json.Marshaler             = Secret{}
	_ zerolog.LogObjectMarshaler = Secret{}
)

// UnmarshalText wraps text as the secret (from a config file).
func (s *Secret) UnmarshalText(text []byte) error {
	s.v = string(text)
	return nil
}

// RedactURL returns s, a URL, with everything between its scheme and its
// last '@' replaced by Redacted, for error messages: the user information
// ("user:password@"), even when the password holds a '/' and the URL does
// not parse (which may hide a path with an '@' too: the safe side).
func RedactURL(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		rest = s
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	return s[:len(s)-len(rest)] + Redacted + rest[at:]
}
