package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/group"
)

// newFlags returns a flag set for a command that does not exit; parse it
// with parseFlags. Asked for with -h or --help, its usage goes to stdout
// (exit 0); after a mistake, to stderr with the error (exit 2).
func newFlags(name, argsUsage string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: connector %s %s\n", name, argsUsage)
		fs.PrintDefaults()
	}
	help := &helpFlag{out: stdout}
	fs.Var(help, "h", "print this help and exit")
	fs.Var(help, "help", "print this help and exit")
	return fs
}

// helpFlag is -h and --help: set, parseFlags prints the usage to out.
type helpFlag struct {
	asked bool
	out   io.Writer
}

func (h *helpFlag) String() string   { return "" }
func (h *helpFlag) IsBoolFlag() bool { return true }
func (h *helpFlag) Set(s string) error {
	h.asked = s != "false"
	return nil
}

// answeredHelp prints fs's usage to stdout if -h or --help was given, and
// says whether it did.
func answeredHelp(fs *flag.FlagSet) bool {
	h, _ := fs.Lookup("help").Value.(*helpFlag)
	if h == nil || !h.asked {
		return false
	}
	fs.SetOutput(h.out)
	fs.Usage()
	return true
}

// parseFlags parses args and allows no positional arguments. ok is false when
// the command should stop, with code as its exit code (0 after -h).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if answeredHelp(fs) {
		return exitOK, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "connector %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage, false
	}
	return exitOK, true
}

// configFlag adds the --config flag every job command takes.
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "config.yaml", "the job's YAML config `file`")
}

// loadJob loads and validates the config at path. On a problem it prints
// every error, one per line ("file:line: key: message"), to stderr and
// returns ok false; the command then exits with exitUsage, as DESIGN.md's
// contract asks of a bad config.
func loadJob(path string, stderr io.Writer) (job *config.Job, ok bool) {
	job, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return job, true
}

// slotFlag is --slot, for the commands that read one slot's checkpoints of
// a job in group mode.
func slotFlag(fs *flag.FlagSet) *int {
	return fs.Int("slot", -1, "instances.mode: group: the `slot` whose checkpoints to read (0 to instances.slots-1)")
}

// jobOfSlot is the job cmd works on: job itself in single mode, the job of
// slot in group mode (package group), which then needs --slot. ok false:
// the problem is printed, exit with exitUsage.
func jobOfSlot(job *config.Job, slot int, cmd string, stderr io.Writer) (*config.Job, bool) {
	n := job.Instances.Slots
	switch {
	case !job.Instances.Group() && slot >= 0:
		fmt.Fprintf(stderr, "%s: --slot is for a job with instances.mode: group; %s runs in %s mode\n", cmd, job.File(), job.Instances.Mode)
		return nil, false
	case !job.Instances.Group():
		return job, true
	case slot < 0 || slot >= n:
		fmt.Fprintf(stderr, "%s: %s runs in group mode: each of its %d slots has its own checkpoints; name one with --slot (0 to %d)\n", cmd, job.File(), n, n-1)
		return nil, false
	}
	return group.SlotConfig(job, slot), true
}
