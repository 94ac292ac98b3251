// Command connector runs and inspects exactly-once Kafka-to-sink jobs.
//
//	connector <command> [flags]
//
// Each command lives in its own file (cmd_<name>.go) and registers itself in
// commands from an init function; main.go knows none of them by name.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	_ "github.com/connector-dev/connector/internal/builtin" // every source and sink kind of this build
)

// version is the connector's version, set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/connector
var version = "dev"

// Exit codes. DESIGN.md's contract: 2 for a bad config (or bad usage).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand.
type command struct {
	// summary is the one line shown by `connector help`.
	summary string
	// run executes the command with the arguments after its name and
	// returns the process exit code. ctx is cancelled on SIGINT or SIGTERM.
	// It writes only to stdout and stderr, so tests can call it.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands holds every subcommand by name; each cmd_<name>.go adds its own
// with register.
var commands = map[string]command{}

// register adds a subcommand; call it from an init function.
func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("connector: command " + name + " registered twice")
	}
	commands[name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args[0] to its command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "connector: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: connector <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-12s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'connector <command> -h' for a command's flags.")
}
