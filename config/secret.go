package config

import "github.com/connector-dev/connector/config/secret"

// Secret is a value that must not appear in logs, dumps or error messages
// (package config/secret): only its Value method returns it.
type Secret = secret.Secret

// NewSecret wraps s.
func NewSecret(s string) Secret { return secret.New(s) }
