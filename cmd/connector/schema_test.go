package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/config"
)

// schemaFile is the committed output of `connector schema`.
const schemaFile = "../../connector.schema.json"

// TestSchemaFileIsTheSchemaCommandsOutput: the file editors load is what
// this build prints. Regenerate it with
// `go run ./cmd/connector schema > connector.schema.json`.
func TestSchemaFileIsTheSchemaCommandsOutput(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(t.Context(), []string{"schema"}, &out, &errs); code != exitOK {
		t.Fatalf("connector schema: exit %d: %s", code, errs.String())
	}
	committed, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), committed) {
		t.Fatalf("connector.schema.json is not what `connector schema` prints: run `go run ./cmd/connector schema > connector.schema.json`")
	}
}

// TestEveryShippedConfigFitsTheSchemaAndNamesIt: config.yaml and every
// example validate against the schema and carry the yaml-language-server
// line that points editors at it; files the loader refuses for their
// shape (an unknown key, a misspelt enum, a list where a mapping goes, a
// sink kind this build lacks) do not validate.
func TestEveryShippedConfigFitsTheSchemaAndNamesIt(t *testing.T) {
	sch := compileSchema(t)
	examples, _ := filepath.Glob("../../examples/*.yaml")
	for _, path := range append([]string{"../../config.yaml"}, examples...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := "# yaml-language-server: $schema=" + filepath.ToSlash(mustRel(t, filepath.Dir(path), schemaFile))
		if first, _, _ := strings.Cut(string(b), "\n"); first != want {
			t.Errorf("%s: first line is %q, want %q", path, first, want)
		}
		if err := sch.Validate(yamlInstance(t, string(b))); err != nil {
			t.Errorf("%s does not fit the schema: %v", path, err)
		}
	}
	// Each case is a whole job but for what it is about.
	const base = "name: j\nsource: {topics: [o]}\nsink: {type: stdout}\n"
	for name, doc := range map[string]string{
		"unknown key":             "name: j\nsource: {topics: [o]}\nkafka: {brokers: [b:1]}\nsink: {type: file, path: ./o, colour: red}\n",
		"misspelt enum":           base + "kafka: {brokers: [b:1]}\ncheckpoint: {mode: exactly_twice}\n",
		"list for a mapping":      base + "kafka: [b:1]\n",
		"unknown sink kind":       "name: j\nsource: {topics: [o]}\nkafka: {brokers: [b:1]}\nsink: {type: carrier-pigeon}\n",
		"duration without a unit": base + "kafka: {brokers: [b:1]}\ncheckpoint: {interval: 5}\n",
		"log format":              base + "kafka: {brokers: [b:1]}\nlog: {format: xml}\n",
		"log level":               base + "kafka: {brokers: [b:1]}\nlog: {level: verbose}\n",
		"byte size without B":     "name: j\nsource: {topics: [o]}\nkafka: {brokers: [b:1]}\nsink: {type: file, path: ./o, roll_size: 64M}\n",
		"bool word":               base + "kafka: {brokers: [b:1], tls: {enabled: yes}}\n",
	} {
		if err := sch.Validate(yamlInstance(t, doc)); err == nil {
			t.Errorf("%s: the schema accepts %q", name, doc)
		}
		if _, err := config.Parse("bad.yaml", []byte(doc), func(string) (string, bool) { return "", false }); err == nil {
			t.Errorf("%s: the loader accepts %q: the schema is stricter than the loader", name, doc)
		}
	}
	// What the loader takes beyond plain values, the schema takes too.
	for name, doc := range map[string]string{
		"interpolated integer":   base + "kafka: {brokers: [b:1]}\npipeline: {parallelism: \"${P:-2}\"}\n",
		"lowercase mechanism":    base + "kafka: {brokers: [b:1], sasl: {mechanism: scram-sha-256, username: u, password: p}}\n",
		"one broker as a string": base + "kafka: {brokers: b:1}\n",
		"a section left empty":   base + "kafka: {brokers: [b:1]}\ncheckpoint:\n",
		"an empty value":         base + "kafka: {brokers: [b:1]}\ncheckpoint: {interval: \"\", mode: \"\"}\n",
		"numbers as text":        "name: 2024\nsource: {topics: [123]}\nsink: {type: stdout}\nkafka: {brokers: [b:1]}\npipeline: {parallelism: \"2\"}\n",
		"interpolated type":      "name: j\nsource: {topics: [o]}\nsink: {type: \"${SINK:-stdout}\"}\nkafka: {brokers: [b:1]}\n",
		"byte size in MiB":       "name: j\nsource: {topics: [o]}\nkafka: {brokers: [b:1]}\nsink: {type: file, path: ./o, roll_size: 64MiB, roll_age: 90s}\n",
		"nested filter":          base + "kafka: {brokers: [b:1]}\npipeline: {transforms: [{type: filter, condition: {any: [{field: a, op: eq, value: 1}, {all: [{field: b, op: exists}]}]}}]}\n",
	} {
		if err := sch.Validate(yamlInstance(t, doc)); err != nil {
			t.Errorf("%s: the schema refuses %q: %v", name, doc, err)
		}
		if _, err := config.Parse("good.yaml", []byte(doc), func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%s: the loader refuses %q: %v", name, doc, err)
		}
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(config.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(config.SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return sch
}

// yamlInstance is doc as the JSON value a YAML language server validates.
func yamlInstance(t *testing.T, doc string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	rel, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
