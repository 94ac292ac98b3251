package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/connector-dev/connector/config"
)

func init() {
	register("schema", command{
		summary: "print the JSON Schema of a job's config file (for editors: yaml-language-server)",
		run:     runSchema,
	})
}

// runSchema: connector schema
//
// It prints config.Schema, with the kinds of this build, as indented
// JSON. The repository keeps its output as connector.schema.json, which
// config.yaml and the examples name on their yaml-language-server line.
func runSchema(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("schema", "", stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	b, err := json.MarshalIndent(config.Schema(), "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "connector schema: %v\n", err)
		return exitFailure
	}
	_, _ = stdout.Write(append(b, '\n'))
	return exitOK
}
