package config

import (
	"testing"
	"time"
)

// TestExampleConfigIsValid: the commented config.yaml at the top of the
// repository loads, with no environment, into the job it describes.
func TestExampleConfigIsValid(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "")
	j, err := Load("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "orders-to-files" || j.Kafka.Brokers[0] != "localhost:9092" || j.Source.Topics[0] != "orders" {
		t.Errorf("job: %+v", j)
	}
	if j.Sink.Type != SinkFile || j.Sink.Path != "./out" || j.Sink.Format != FormatJSONL {
		t.Errorf("sink: %+v", j.Sink)
	}
	var types []TransformType
	for _, tr := range j.Pipeline.Transforms {
		types = append(types, tr.Type)
	}
	if len(types) != 3 || types[0] != TransformFilter || types[1] != TransformProject || types[2] != TransformDedup {
		t.Errorf("transforms: %v, want filter, project, dedup", types)
	}
	if d := j.Pipeline.Transforms[2].Dedup; d.Key != "id" || d.TTL != 10*time.Minute || j.Pipeline.Transforms[2].Line == 0 {
		t.Errorf("dedup: %+v at line %d", d, j.Pipeline.Transforms[2].Line)
	}
}

func TestLoadOfMissingFileWrapsTheFSError(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if err == nil || err.Error() != "config: open testdata/does-not-exist.yaml: no such file or directory" {
		t.Errorf("Load = %v", err)
	}
}
