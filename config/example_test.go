package config_test

import (
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/transform"
)

// TestExampleConfigIsValid: the commented config.yaml at the top of the
// repository loads, with no environment, into the job it describes.
func TestExampleConfigIsValid(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "")
	j, err := config.Load("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "orders-to-files" || j.Kafka.Brokers[0] != "localhost:9092" || src(j).Topics[0] != "orders" {
		t.Errorf("job: %+v", j)
	}
	if f := fileSink(j); j.Sink.Type != "file" || f.Path != "./out" || f.Format != "jsonl" {
		t.Errorf("sink: %+v %+v", j.Sink, f)
	}
	var types []string
	for _, tr := range j.Pipeline.Transforms {
		types = append(types, tr.Type)
	}
	if len(types) != 3 || types[0] != "filter" || types[1] != "project" || types[2] != "dedup" {
		t.Errorf("transforms: %v, want filter, project, dedup", types)
	}
	d, ok := j.Pipeline.Transforms[2].Config.(*transform.DedupConfig)
	if !ok || d.Key != "id" || d.TTL != 10*time.Minute || j.Pipeline.Transforms[2].Line == 0 {
		t.Errorf("dedup: %+v at line %d", d, j.Pipeline.Transforms[2].Line)
	}
}

func TestLoadOfMissingFileWrapsTheFSError(t *testing.T) {
	_, err := config.Load("testdata/does-not-exist.yaml")
	if err == nil || err.Error() != "config: open testdata/does-not-exist.yaml: no such file or directory" {
		t.Errorf("Load = %v", err)
	}
}
