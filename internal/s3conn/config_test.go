package s3conn

import (
	"strings"
	"testing"

	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/spec"
)

// Without configured keys the environment's are taken; with neither, the
// error says what to set, under the section's keys.
func TestCredentialsComeFromTheEnvironment(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "env-id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "env-token")
	c := Config{}
	id, sec, token, err := c.Credentials("sink")
	if err != nil || id != "env-id" || sec != "env-secret" || token != "env-token" {
		t.Fatalf("Credentials() = %q %q %q %v", id, sec, token, err)
	}
	c = Config{AccessKeyID: "cfg-id", SecretAccessKey: secret.New("cfg-secret")}
	if id, sec, token, _ := c.Credentials("sink"); id != "cfg-id" || sec != "cfg-secret" || token != "" {
		t.Fatalf("configured credentials: %q %q %q", id, sec, token)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	_, _, _, err = (&Config{}).Credentials("checkpoint.s3")
	if err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") || !strings.Contains(err.Error(), "checkpoint.s3.access_key_id") {
		t.Fatalf("no credentials: %v", err)
	}
}

// Validate names each bad key.
func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Endpoint: "localhost:9000", Region: "r"}, "endpoint"},
		{Config{Endpoint: "http://h:1/path", Region: "r"}, "endpoint"},
		{Config{}, "region"},
		{Config{Region: "r", AccessKeyID: "a"}, "secret_access_key"},
		{Config{Region: "r", SecretAccessKey: secret.New("s")}, "secret_access_key"},
	} {
		var p spec.Problems
		tc.c.Validate(p.At("checkpoint.s3"))
		if got := p.List(); len(got) != 1 || !strings.Contains(got[0].Key, "checkpoint.s3."+tc.want) {
			t.Errorf("%+v: problems %v, want one under checkpoint.s3.%s", tc.c, got, tc.want)
		}
	}
	var p spec.Problems
	(&Config{Endpoint: "https://s3.example:443", Region: "r"}).Validate(&p)
	if len(p.List()) != 0 {
		t.Errorf("a good config: %v", p.List())
	}
}
