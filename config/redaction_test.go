package config_test

import (
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
)

// Validation errors never quote the credentials of a URL: a URL with
// user:password is refused, and its password would otherwise be printed
// on stderr by validate and run (and kept by the log collector), even
// when it came from ${VAR}; also when the password holds a '/', so that
// the URL does not parse.
func TestURLCredentialsAreNotEchoedInErrors(t *testing.T) {
	const secret = "SUPERSECRETKEY"
	for _, tc := range []struct {
		name string
		data []byte
		env  map[string]string
	}{
		{"checkpoint.s3.endpoint", with("checkpoint: {storage: s3://bucket/p, s3: {endpoint: 'http://AKIAX:" + secret + "@host:9000'}}"), nil},
		{"checkpoint.s3.endpoint from env", with("checkpoint: {storage: s3://bucket/p, s3: {endpoint: '${S3_ENDPOINT}'}}"), map[string]string{"S3_ENDPOINT": "https://AKIAX:" + secret + "@host"}},
		{"checkpoint.storage", with("checkpoint: {storage: 's3://AKIAX:" + secret + "@bucket/p'}"), nil},
		{"checkpoint.storage, a '/' in the password", with("checkpoint: {storage: 's3://AKIAX:ab/" + secret + "@bucket/p'}"), nil},
		{"checkpoint.storage in group mode", with("instances: {mode: group}", "checkpoint: {storage: 's3://AKIAX:"+secret+"@bucket/p'}"), nil},
		{"sink.endpoint (s3 sink)", doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}",
			"sink: {type: s3, bucket: out, endpoint: 'http://AKIAX:"+secret+"@host:9000'}"), nil},
		{"kafka.brokers", doc("name: orders", "kafka: {brokers: ['AKIAX:"+secret+"@host:9092']}", "source: {topics: [orders]}", "sink: {type: stdout}"), nil},
	} {
		_, err := config.Parse("config.yaml", tc.data, env(tc.env))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error prints the URL's password:\n%v", tc.name, err)
		}
	}
}

// A Secret's text is not quoted by interpolation errors: a password
// holding "${" (the file should have written "$${") is refused, and the
// error says what is wrong without printing the password from the "${" on.
func TestInterpolationErrorDoesNotEchoASecret(t *testing.T) {
	for _, password := range []string{"Zq9${Tr0ub4dor&3", "Zq9${Tr0ub4dor}3", "Zq9${Tr0ub-4dor}3"} {
		data := doc(
			"name: orders",
			"kafka:",
			"  brokers: [localhost:9092]",
			"  tls: {enabled: true}",
			`  sasl: {mechanism: PLAIN, username: me, password: "`+password+`"}`,
			"source: {topics: [orders]}",
			"sink: {type: stdout}",
		)
		_, err := config.Parse("config.yaml", data, env(nil))
		if err == nil {
			t.Fatalf("%s: accepted", password)
		}
		if strings.Contains(err.Error(), "Tr0ub") || !strings.Contains(err.Error(), "config.yaml:5: kafka.sasl.password: ") {
			t.Errorf("the error about kafka.sasl.password prints part of the password, or names no line:\n%v", err)
		}
	}
}

// Dump shows every value that came from ${VAR} as the file wrote it,
// also in keys defaulted from another key ("@/name": kafka.client_id,
// source.group), which printed the interpolated value.
func TestDumpDoesNotPrintInterpolatedValuesThroughDefaults(t *testing.T) {
	const value = "tenant-4711-private"
	j := mustParse(t, doc(
		"name: ${JOB_NAME}",
		"kafka: {brokers: [localhost:9092]}",
		"source: {topics: [orders]}",
		"sink: {type: stdout}",
	), map[string]string{"JOB_NAME": value})
	d, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(d), "\n") {
		if strings.Contains(line, value) {
			t.Errorf("the dump prints the value of ${JOB_NAME}: %q", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(string(d), "client_id: ${JOB_NAME}") {
		t.Errorf("the dump does not show kafka.client_id as name's written text:\n%s", d)
	}
}
