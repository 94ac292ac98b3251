package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
)

// TestProblemsPastTheCapAreCountedOnceEach: README ("Bad input") and
// config/doc.go say at most 100 problems are listed and a last one
// counts the rest. A file with 101 transforms of an unknown type has 101
// problems (each shown alone under the cap: 100 such transforms give
// exactly 100 lines), so the count must be 1. Past the cap the collector
// counts problems that related() drops below it (a second problem of
// the same key), and says 2.
func TestProblemsPastTheCapAreCountedOnceEach(t *testing.T) {
	for _, n := range []int{100, 101} {
		lines := []string{"pipeline:", "  transforms:"}
		for i := range n {
			lines = append(lines, fmt.Sprintf("    - {type: nope%d}", i))
		}
		_, err := config.Parse("config.yaml", with(lines...), env(nil))
		var errs config.Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%d transforms: Parse = %v, want config.Errors", n, err)
		}
		if n == 100 {
			if len(errs) != 100 {
				t.Fatalf("100 unknown transforms: %d problems, want 100 (one each)", len(errs))
			}
			continue
		}
		if len(errs) != 101 {
			t.Fatalf("101 unknown transforms: %d lines, want 100 and a count", len(errs))
		}
		if last, want := errs[100].Error(), "config.yaml: 1 more problems not shown"; last != want {
			t.Errorf("101 unknown transforms, one problem each: last line %q, want %q", last, want)
		}
	}
}

// TestPrintShowsTLSOnWhenAnyTLSKeyIsSet: README says `validate --print` (and
// /api/job) writes the effective config; config.yaml says of kafka.tls
// "any key turns it on" (TLS.On). A job with only tls.server_name
// connects with TLS, yet the printed config says tls.enabled: false.
func TestPrintShowsTLSOnWhenAnyTLSKeyIsSet(t *testing.T) {
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092], tls: {server_name: kafka.example}}",
		"source: {topics: [orders]}",
		"sink: {type: stdout}",
	), nil)
	if !j.Kafka.TLS.On() {
		t.Fatal("kafka.tls.server_name alone: TLS is off; config.yaml says any tls key turns it on")
	}
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dump), "enabled: false") {
		t.Errorf("TLS is on (server_name set), but the effective config printed says otherwise:\n%s", dump)
	}
}
