package s3

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/sink"
	_ "github.com/connector-dev/connector/source/kafka" // source.type: kafka, for whole job files
)

const jobYAML = `name: orders
kafka:
  brokers: ["localhost:9092"]
source:
  topics: [orders]
sink:
  type: s3
`

// The sink: section loads through the config layer with its defaults.
func TestConfigLoadsWithDefaults(t *testing.T) {
	j, err := config.Parse("job.yaml", []byte(jobYAML+"  bucket: out\n  endpoint: http://127.0.0.1:9000\n  secret_access_key: s3cr3t\n  access_key_id: me\n"), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	c := j.Sink.Config.(*Config)
	if c.Bucket != "out" || c.Region != "us-east-1" || c.Format != "jsonl" || c.PartSize != 16*config.MiB || c.RollSize != 128*config.MiB ||
		c.RollAge != time.Minute || c.RollOnCheckpoint || c.PathStyle != s3conn.Unset || !c.PathStyle.Or(c.Endpoint != "") {
		t.Errorf("config %+v", c)
	}
	dump, err := j.Dump()
	if err != nil || strings.Contains(string(dump), "s3cr3t") {
		t.Errorf("the dump shows the secret or fails (%v):\n%s", err, dump)
	}
	j, err = config.Parse("job.yaml", []byte(jobYAML+"  bucket: out\n  path_style: false\n"), nil)
	if err != nil || j.Sink.Config.(*Config).PathStyle.Or(true) {
		t.Errorf("path_style: false: %v", err)
	}
}

// Validation names every bad key with its line.
func TestConfigValidationNamesTheKeys(t *testing.T) {
	_, err := config.Parse("job.yaml", []byte(jobYAML+`  prefix: /abs
  endpoint: s3.example.com
  access_key_id: me
  format: csv
  part_size: 1MiB
  roll_size: 100GiB
  roll_age: -1s
`), nil)
	if err == nil {
		t.Fatal("Parse accepted a bad sink section")
	}
	for _, want := range []string{"sink.bucket", "sink.prefix", "sink.endpoint", "sink.secret_access_key", "sink.format", "sink.part_size", "sink.roll_size", "sink.roll_age"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no problem reported for %s:\n%v", want, err)
		}
	}
}

// New checks the bucket: missing, or credentials refused, is a config
// error naming bucket and endpoint.
func TestNewRefusesAMissingBucketAndRefusedCredentials(t *testing.T) {
	f := newFakeS3("other", testPart)
	_, err := New(testConfig(f, func(c *Config) { c.Endpoint = "http://127.0.0.1:1" }), zerolog.Nop())
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), `"bucket"`) || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("missing bucket: %v", err)
	}
	if key, _ := cfgkey.Of(err); key != "sink.bucket" {
		t.Errorf("missing bucket: key %q attached, want sink.bucket (its line is printed)", key)
	}
	f = newFakeS3(testBucket, testPart)
	f.fail = func(string, string) error { return s3Error("InvalidAccessKeyId", http.StatusForbidden) }
	_, err = New(testConfig(f, nil), zerolog.Nop())
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "credentials") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("refused credentials: %v", err)
	}
}

func TestNamesParseWhatTheyMake(t *testing.T) {
	n := newNames("out/", "a.b-c", "jsonl")
	key, base := n.objectKey("", 42, 3, 7)
	if key != "out/a.b-c/part-a.b-c-000000000042-w3-7.jsonl" || base != "part-a.b-c-000000000042-w3-7.jsonl" {
		t.Fatalf("objectKey = %q, %q", key, base)
	}
	if f, w, s, ok := n.parseObject(key); !ok || f != 42 || w != 3 || s != 7 {
		t.Fatalf("parseObject(%q) = %d %d %d %v", key, f, w, s, ok)
	}
	d := n.deltaKey(base, 9)
	if b, ok := n.deltaObject(d); !ok || b != base || d != "out/_connector/a.b-c/tails/part-a.b-c-000000000042-w3-7.jsonl/000000000009" {
		t.Fatalf("deltaKey = %q (%q %v)", d, b, ok)
	}
	// Another job's keys are not this job's, even with a shared prefix.
	other := newNames("out/", "a.b-c-w1", "jsonl")
	k2, _ := other.objectKey("", 42, 3, 7)
	if _, _, _, ok := n.parseObject(k2); ok {
		t.Fatalf("%q parsed as job a.b-c's", k2)
	}
	if !(n.firstAfter(41) < key && key < n.firstAfter(42)) {
		t.Fatalf("firstAfter does not bracket %q", key)
	}
}
