package config_test

import (
	"testing"

	"github.com/connector-dev/connector/config"
)

// TestLineNamesTheKeyOrItsClosestParentInTheFile: Job.Line places a
// problem found after Load (a bucket that does not exist at start) where
// validation would have: the key's line, else its closest parent's in
// the file, else 1; 0 for a Job built in code, which has no lines.
func TestLineNamesTheKeyOrItsClosestParentInTheFile(t *testing.T) {
	job, err := config.Parse("job.yaml", doc(
		"name: orders",
		"kafka:",
		"  brokers: [localhost:9092]",
		"source: {topics: [orders]}",
		"sink:",
		"  type: kafka",
		"",
		"  topic: out",
	), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"sink.topic", 8},         // present
		{"sink.sasl.password", 5}, // absent, its parent sink: present
		{"kafka.brokers[0]", 3},   // a list item
		{"kafka.tls.ca_file", 2},  // absent, kafka: present
		{"checkpoint.storage", 1}, // absent, and so is checkpoint:
	} {
		if got := job.Line(tc.key); got != tc.want {
			t.Errorf("Line(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if got := (&config.Job{}).Line("sink.topic"); got != 0 {
		t.Errorf("Line of a Job built in code = %d, want 0", got)
	}
}
