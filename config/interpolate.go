package config

import (
	"fmt"
	"strings"
)

// LookupEnv finds an environment variable; os.LookupEnv is one.
type LookupEnv func(name string) (value string, ok bool)

// expand replaces ${VAR} and ${VAR:-default} in s. ${VAR:-default} gives
// default when VAR is unset or empty; ${VAR} with VAR unset is an error. "$${"
// is a literal "${"; any other "$" is kept as it is. Expanded text is not
// expanded again.
func expand(s string, lookup LookupEnv) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // "$${": escaped
			b.WriteString(s[:i]) // keeps one '$'
			b.WriteString("{")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q has no closing } for ${", s[i:])
		}
		ref := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("${%s}: %q is not a variable name", ref, name)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
		}
		b.WriteString(v)
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
