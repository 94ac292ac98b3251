package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	register("validate", command{
		summary: "check a job's config; exit 0 if it is valid, 2 if not",
		run:     runValidate,
	})
}

// runValidate: connector validate --config FILE [--print]
func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "--config FILE [--print]", stdout, stderr)
	path := configFlag(fs)
	printConfig := fs.Bool("print", false, "print the effective config (defaults filled in, secrets as ***)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	job, ok := loadJob(*path, stderr)
	if !ok {
		return exitUsage
	}
	if *printConfig {
		dump, err := job.Dump()
		if err != nil {
			fmt.Fprintf(stderr, "connector validate: %v\n", err)
			return exitFailure
		}
		stdout.Write(dump)
		// On stderr: the dump alone on stdout can be saved and loaded again.
		fmt.Fprintf(stderr, "config OK: %s\n", *path)
		return exitOK
	}
	fmt.Fprintf(stdout, "config OK: %s\n", *path)
	return exitOK
}
