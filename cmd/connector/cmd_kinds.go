package main

import (
	"context"
	"fmt"
	"io"

	"github.com/connector-dev/connector/config"
)

func init() {
	register("kinds", command{
		summary: "list the source, sink and transform kinds this build runs",
		run:     runKinds,
	})
}

// runKinds: connector kinds
func runKinds(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("kinds", "", stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	for _, section := range []string{config.SectionSource, config.SectionSink, config.SectionTransform} {
		fmt.Fprintf(stdout, "%s:\n", section)
		for _, k := range config.Kinds(section) {
			def := ""
			if k.Default {
				def = " (default)"
			}
			fmt.Fprintf(stdout, "  %-10s %s%s\n", k.Name, k.Summary, def)
		}
	}
	return exitOK
}
