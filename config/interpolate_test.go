package config

import "testing"

func TestExpandReplacesVariablesAndDefaults(t *testing.T) {
	vars := env(map[string]string{"HOST": "kafka", "EMPTY": "", "PORT": "9093"})
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"${HOST}", "kafka"},
		{"${HOST}:${PORT}", "kafka:9093"},
		{"${MISSING:-localhost}:9092", "localhost:9092"},
		{"${EMPTY:-fallback}", "fallback"}, // :- covers set-but-empty too
		{"${EMPTY}", ""},
		{"${MISSING:-}", ""},
		{"${HOST:-unused}", "kafka"},
		{"${MISSING:-a:-b}", "a:-b"}, // the default is everything up to }
		{"cost $5 and $${HOST}", "cost $5 and ${HOST}"},
		{"${HOST}${HOST}", "kafkakafka"},
		{"$$${HOST}", "$${HOST}"}, // the first '$' is literal, then "$${"
		{"a}b$", "a}b$"},
	} {
		got, err := expand(tc.in, vars)
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandRejectsUnsetAndMalformed(t *testing.T) {
	vars := env(map[string]string{"X": "${Y}"})
	for _, tc := range []struct{ in, want string }{
		{"${NOPE}", "environment variable NOPE is not set (write ${NOPE:-default} to give a default)"},
		{"${1ST}", `${1ST}: "1ST" is not a variable name`},
		{"${}", `${}: "" is not a variable name`},
		{"a ${B", `"${B" has no closing } for ${`},
		{"${MISSING:-${HOST}", `"${MISSING:-${HOST}" has no closing } for ${`},
		{"${MISSING:-${NOPE}/x}", "environment variable NOPE is not set (write ${NOPE:-default} to give a default)"},
		{"${HOST:-${1ST}}", `${1ST}: "1ST" is not a variable name`}, // checked even where not used
		{"${A:-${B:-${C:-${D:-${E:-${F:-${G:-${H:-${I:-${J:-${K:-x}}}}}}}}}}}", "${...} nested more than 10 deep"},
	} {
		_, err := expand(tc.in, vars)
		if err == nil || err.Error() != tc.want {
			t.Errorf("expand(%q) error = %v; want %q", tc.in, err, tc.want)
		}
	}
	// Expanded text is not expanded again.
	if got, err := expand("${X}", vars); got != "${Y}" || err != nil {
		t.Errorf("expand(${X}) = %q, %v; want the value as it is", got, err)
	}
}

// TestExpandNestedDefaults: a default is itself interpolated, as in the
// shell, and only when it is used.
func TestExpandNestedDefaults(t *testing.T) {
	vars := env(map[string]string{"HOST": "kafka", "EMPTY": "", "DIR": "/data"})
	for _, tc := range []struct{ in, want string }{
		{"${STATE:-${DIR}/state}", "/data/state"},
		{"${HOST:-${NOPE}/state}", "kafka"}, // the default is not used: NOPE may be unset
		{"${A:-${B:-${C:-deep}}}", "deep"},
		{"${EMPTY:-${HOST}:${PORT:-9092}}", "kafka:9092"},
		{"${A:-$${B}}", "${B}"},    // an escape inside a default
		{"${A:-x}y}", "xy}"},       // the first unmatched } closes the reference
		{"${A:-{json}}", "{json}"}, // braces pair up inside a default
		{"pre ${A:-${DIR}} post", "pre /data post"},
	} {
		got, err := expand(tc.in, vars)
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// env returns a LookupEnv over m.
func env(m map[string]string) LookupEnv {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
