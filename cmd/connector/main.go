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
	"runtime/debug"
	"slices"
	"syscall"

	_ "github.com/connector-dev/connector/internal/builtin" // every source and sink kind of this build
)

// version is the connector's version, set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/connector
var version = "dev"

// Exit codes. DESIGN.md's contract: 2 for a bad config (or bad usage).
// The Go runtime ends a process with 2 too, after a panic nothing recovered
// or a fatal error; main makes those end otherwise (see main).
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitInternal = 3 // a panic on the main goroutine: a bug
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

// main runs the command and exits with its code. A bug must never exit
// with 2, the contract's code for a bad config:
//
//   - a panic on the main goroutine (the command itself, including the
//     job's driver loop) is recovered once every deferred cleanup has run,
//     its stack printed, and the process exits with exitInternal (3);
//   - a panic on any other goroutine cannot be recovered from here, and a
//     fatal runtime error (out of memory, concurrent map writes, a
//     deadlock) by nothing: the traceback level "crash" makes the runtime
//     end the process with SIGABRT after printing every goroutine's stack
//     (exit status 134 in a shell, Docker and Kubernetes), where it would
//     otherwise exit with 2. A core file is written only if the process's
//     core size limit (ulimit -c) allows it.
//
// Either way the job restarts from its last completed checkpoint when it
// is started again, as after any crash.
func main() {
	debug.SetTraceback("crash")
	ctx, stop := stopOnSignal()
	code := runRecovered(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopOnSignal returns a context cancelled by the first SIGINT or SIGTERM,
// which asks the command to stop as it should (a job: take a final
// checkpoint, then exit 0). A second one ends the process at once with
// 128 plus the signal's number (130, 143), as a shell reports a process
// the signal killed, without the final checkpoint: that is safe, since
// the next start resumes from the last completed checkpoint, as after any
// crash. This is what a second Ctrl-C during a slow final checkpoint does.
// The caller must call the returned function when the command returns.
func stopOnSignal() (context.Context, func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-signals
		cancel()
		if s, ok := (<-signals).(syscall.Signal); ok {
			os.Exit(128 + int(s))
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel()
	}
}

// runRecovered is run, with a panic turned into exitInternal and its stack
// printed to stderr.
func runRecovered(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "connector: internal error (a bug; please report it): panic: %v\n\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	return run(ctx, args, stdout, stderr)
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
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
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
