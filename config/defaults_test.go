package config_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/transform"
)

// TestMinimalFileGetsDesignDefaults: the four required keys are enough, and
// the rest are DESIGN.md's values.
func TestMinimalFileGetsDesignDefaults(t *testing.T) {
	j := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: file, path: ./out}"), nil)
	if j.Kafka.ClientID != "orders" || j.Source.Type != "kafka" || src(j).Group != "orders" || src(j).StartOffset != "earliest" {
		t.Errorf("kafka/source: %+v %+v", j.Kafka, src(j))
	}
	wantCkpt := checkpoint.Config{Interval: time.Second, Timeout: time.Minute, MaxConcurrent: 1, Retained: 3,
		Mode: checkpoint.ExactlyOnce, Dir: "./data/checkpoints", InitialDelay: time.Second, TolerableFailures: 5, OnUnrestorable: "fail"}
	if j.Checkpoint.Config != wantCkpt || j.Checkpoint.Storage != "" {
		t.Errorf("checkpoint:\n got %+v\nwant %+v", j.Checkpoint, wantCkpt)
	}
	if j.State.Dir != "./data/state" || j.Pipeline.Parallelism != 1 || j.Pipeline.MaxParallelism != 128 ||
		j.Pipeline.OnDecodeError.Policy != config.DecodeFail || j.HTTP.Addr != "127.0.0.1:8080" {
		t.Errorf("state/pipeline/http: %+v %+v %+v", j.State, j.Pipeline, j.HTTP)
	}
	if f := fileSink(j); f.Path != "./out" || f.Format != "jsonl" || f.RollSize != 128*config.MiB || f.RollAge != time.Minute {
		t.Errorf("file sink: %+v", f)
	}
}

func TestExplicitValuesBeatDefaults(t *testing.T) {
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092], client_id: me}",
		"source: {topics: [orders], group: g2, start_offset: latest}",
		"checkpoint: {initial_delay: 0s, min_pause: 200ms, tolerable_failures: 0}",
		"pipeline:",
		"  transforms: [{type: dedup, key: id, ttl: 1h}]",
		"sink: {type: stdout, format: raw}",
	), nil)
	if j.Kafka.ClientID != "me" || src(j).Group != "g2" || src(j).StartOffset != "latest" {
		t.Errorf("strings: %+v %+v", j.Kafka, src(j))
	}
	if j.Checkpoint.InitialDelay != 0 || j.Checkpoint.MinPause != 200*time.Millisecond || j.Checkpoint.TolerableFailures != 0 {
		t.Errorf("an explicit zero must stay zero: %+v", j.Checkpoint)
	}
	if d := j.Pipeline.Transforms[0].Config.(*transform.DedupConfig); d.TTL != time.Hour {
		t.Errorf("ttl: %+v", d)
	}
}

// TestJobBuiltInCodeGetsTheSameDefaults: FillDefaults on a Job literal gives
// what Load gives for the same minimal file, and Validate checks it.
func TestJobBuiltInCodeGetsTheSameDefaults(t *testing.T) {
	fromFile := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: stdout}"), nil)
	inCode := &config.Job{
		Name:  "orders",
		Kafka: config.Kafka{Brokers: []string{"localhost:9092"}},
		Sink:  config.Plugin{Type: "stdout"}, // the source: the default kind, made by FillDefaults
	}
	inCode.FillDefaults()
	src(inCode).Topics = []string{"orders"}
	if err := inCode.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	a, b := dump(t, inCode), dump(t, fromFile)
	if a != b {
		t.Errorf("\nin code:\n%s\nfrom file:\n%s", a, b)
	}
	inCode.Pipeline.Parallelism = -1
	if err := inCode.Validate(); err == nil {
		t.Errorf("Validate accepted parallelism -1")
	}
	bad := &config.Job{Kafka: config.Kafka{Brokers: []string{"b:9092"}}, Sink: config.Plugin{Type: "stdout"}}
	bad.FillDefaults()
	src(bad).Topics = []string{"t"}
	if err := bad.Validate(); err == nil || err.Error() != "name: is required" {
		t.Errorf("Validate without a file: %v, want %q", err, "name: is required")
	}
}

func dump(t *testing.T, j *config.Job) string {
	t.Helper()
	b, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryKindFillsItsDefaults: every registered kind's `default` tags
// parse (a malformed tag would panic at load time instead).
func TestEveryKindFillsItsDefaults(t *testing.T) {
	for _, section := range []string{config.SectionSource, config.SectionSink, config.SectionTransform} {
		kinds := config.Kinds(section)
		if len(kinds) == 0 {
			t.Errorf("no %s kind registered", section)
		}
		for _, k := range kinds {
			for _, f := range spec.Fields(k.New(), section) {
				if f.Default == "" || strings.HasPrefix(f.Default, "@") {
					continue
				}
				v := reflect.New(f.Value.Type()).Elem()
				if err := spec.SetScalar(v, f.Default); err != nil {
					t.Errorf("%s kind %s: default of %s (%q): %v", section, k.Name, f.Key, f.Default, err)
				}
			}
		}
	}
}

// commentedKey matches a commented-out setting in config.yaml, such as
// "  # client_id: orders-to-files      # default: the job name".
var commentedKey = regexp.MustCompile(`^(\s*)#\s?([a-z_]+):(\s.*)?$`)

// TestConfigYAMLDocumentsTheCodesDefaults: config.yaml says "the defaults
// are shown here as they are". Every key it shows, set or commented out,
// must hold the value the code's `default` tag gives it.
func TestConfigYAMLDocumentsTheCodesDefaults(t *testing.T) {
	data, err := os.ReadFile("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	whole := mustParse(t, data, map[string]string{"KAFKA_PASSWORD": "x"})
	for _, f := range spec.Fields(whole, "") {
		known[f.Key[strings.LastIndexAny(f.Key, ".]")+1:]] = true
	}
	var lines []string
	uncommented := 0
	for _, l := range strings.Split(string(data), "\n") {
		if m := commentedKey.FindStringSubmatch(l); m != nil && known[m[2]] && strings.TrimSpace(m[3]) != "" {
			l = m[1] + m[2] + ":" + m[3]
			uncommented++
		}
		lines = append(lines, l)
	}
	if uncommented == 0 {
		t.Fatal("found no commented-out setting in config.yaml; has its style changed?")
	}
	shown := []byte(strings.Join(lines, "\n"))
	vars := map[string]string{"KAFKA_PASSWORD": "x"}
	j := mustParse(t, shown, vars)
	def := mustParse(t, shown, vars)
	// Zero every defaulted field of def, then fill the defaults again: def
	// then holds exactly what the tags say, j what the file shows.
	var checked []string
	for _, f := range spec.Fields(def, "") {
		if f.Default != "" {
			f.Value.Set(reflect.Zero(f.Value.Type()))
			checked = append(checked, f.Key)
		}
	}
	if err := spec.Fill(def, "", nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]reflect.Value{}
	for _, f := range spec.Fields(j, "") {
		got[f.Key] = f.Value
	}
	for _, f := range spec.Fields(def, "") {
		if f.Default == "" {
			continue
		}
		if g := got[f.Key]; !reflect.DeepEqual(g.Interface(), f.Value.Interface()) {
			t.Errorf("config.yaml shows %s: %v, but its default (%q) is %v", f.Key, g.Interface(), f.Default, f.Value.Interface())
		}
	}
	t.Logf("%d commented settings uncommented; %d defaulted keys compared", uncommented, len(checked))
}
