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

// env returns a LookupEnv over m.
func env(m map[string]string) LookupEnv {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
