package config

import (
	"errors"
	"fmt"
	"strings"
)

// LookupEnv finds an environment variable; os.LookupEnv is one.
type LookupEnv func(name string) (value string, ok bool)

// maxNesting bounds ${...} inside the default of a ${...}.
const maxNesting = 10

// expand replaces ${VAR} and ${VAR:-default} in s, much as a POSIX shell
// with set -u does:
//
//   - ${VAR} is VAR's value; VAR unset is an error.
//   - ${VAR:-default} is default when VAR is unset or empty. The default is
//     itself expanded (${STATE_DIR:-${HOME}/state}), only when it is used;
//     its braces pair up, so the first unpaired "}" ends it.
//   - "$${" is a literal "${", anywhere; any other "$" is kept as it is.
//   - A "${" without its closing "}" is an error, as is ${...} nested
//     more than maxNesting deep.
//
// The value of a variable is not expanded again.
func expand(s string, lookup LookupEnv) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	// Syntax first, then values: a missing "}" is reported as such, not as
	// a variable it made look unset.
	var b strings.Builder
	for _, use := range []bool{false, true} {
		e := expander{s: s, lookup: lookup}
		if err := e.text(&b, use, 0); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// expander reads s from i on.
type expander struct {
	s      string
	i      int
	lookup LookupEnv
}

// text writes to b the expansion of the text from e.i on, which is a
// whole value (depth 0) or the default of a ${...} nested depth deep: then
// it stops at the "}" that closes the reference, without consuming it.
// With use false it only reads the text (an unused default is checked, not
// looked up).
func (e *expander) text(b *strings.Builder, use bool, depth int) error {
	braces := 0 // "{" opened inside a default and not yet closed
	for e.i < len(e.s) {
		rest := e.s[e.i:]
		switch {
		case strings.HasPrefix(rest, "$${"):
			if use {
				b.WriteString("${")
			}
			e.i += 3
			braces++
			continue
		case strings.HasPrefix(rest, "${"):
			if err := e.ref(b, use, depth+1); err != nil {
				return err
			}
			continue
		case depth > 0 && rest[0] == '{':
			braces++
		case depth > 0 && rest[0] == '}':
			if braces == 0 {
				return nil
			}
			braces--
		}
		if use {
			b.WriteByte(rest[0])
		}
		e.i++
	}
	return nil
}

// ref writes to b the expansion of the ${...} at e.i, nested depth deep,
// and moves past it.
func (e *expander) ref(b *strings.Builder, use bool, depth int) error {
	start := e.i
	if depth > maxNesting {
		msg := fmt.Sprintf("${...} nested more than %d deep", maxNesting)
		return &exprError{msg: msg, hidden: msg}
	}
	e.i += 2
	for e.i < len(e.s) && e.s[e.i] != '}' && !strings.HasPrefix(e.s[e.i:], ":-") {
		e.i++
	}
	if e.i == len(e.s) {
		return unterminated(e.s[start:])
	}
	name := e.s[start+2 : e.i]
	if !validVarName(name) {
		ref, _, _ := strings.Cut(e.s[start+2:], "}")
		return &exprError{
			msg:    fmt.Sprintf("${%s}: %q is not a variable name", ref, name),
			hidden: "the value has a ${...} that holds no variable name (write $${ for a literal ${)",
		}
	}
	v, ok := "", false
	if use {
		v, ok = e.lookup(name)
	}
	hasDef := e.s[e.i] == ':'
	if hasDef {
		e.i += 2
		useDef := use && v == ""
		var def strings.Builder
		if err := e.text(&def, useDef, depth); err != nil {
			return err
		}
		if e.i == len(e.s) {
			return unterminated(e.s[start:])
		}
		if useDef {
			v, ok = def.String(), true
		}
	}
	e.i++ // the closing "}"
	if use && !ok {
		return &exprError{
			msg:    fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name),
			hidden: "the value has a ${...} naming an environment variable that is not set (write $${ for a literal ${)",
			unset:  true,
		}
	}
	b.WriteString(v)
	return nil
}

func unterminated(s string) error {
	return &exprError{
		msg:    fmt.Sprintf("%q has no closing } for ${", s),
		hidden: "the value has a ${ without a closing } (write $${ for a literal ${)",
	}
}

// exprError is a ${...} that cannot be expanded. Its Error quotes the
// text around the reference; hidden says what is wrong without any of
// it, for a Secret's value.
type exprError struct {
	msg    string
	hidden string
	unset  bool // a variable that is not set: its name is in msg
}

func (e *exprError) Error() string { return e.msg }

// errorOf describes err, an error of expand of value, for the problem of
// a key: for a Secret (secret true), without quoting value, but naming an
// unset variable when value starts with the reference (password:
// ${KAFKA_PASSWORD}), where the name is not part of a password.
func errorOf(err error, value string, secret bool) string {
	var e *exprError
	if !secret || !errors.As(err, &e) || (e.unset && strings.HasPrefix(value, "${")) {
		return err.Error()
	}
	return e.hidden + "; the value is secret, so not shown"
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
