package crashpoint

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Env is the environment variable that selects the crash points.
const Env = "CONNECTOR_CRASH_AT"

// The named points. The runtime calls Hit with these at the places described.
const (
	// AfterPreCommit: a sink task has pre-committed for a barrier (files
	// fsynced into pending names, transaction flushed) and has not yet
	// acknowledged the checkpoint.
	AfterPreCommit = "after-precommit"
	// AfterPersist: the checkpoint's metadata is durable (the store's Save
	// returned nil) and no task has been notified of completion yet.
	AfterPersist = "after-persist"
	// MidCommit: between two renames of one sink commit, so that part of a
	// checkpoint's output is visible and part is not.
	MidCommit = "mid-commit"
	// DuringRestore: after a restart has loaded the checkpoint to restore
	// and before the job runs again (the sink recovered, the state
	// restored, the source opened, nothing read).
	DuringRestore = "during-restore"
	// AfterFlush: a transactional sink's writer has every record of its
	// transaction acknowledged by the brokers and has not yet added its
	// progress marker (the transaction is open, not pre-committed).
	AfterFlush = "after-flush"
	// BeforeEndTxn: a checkpoint is durable and the transactional sink is
	// about to end one of its transactions (EndTxn).
	BeforeEndTxn = "before-endtxn"
	// BetweenCommits: between two writers' commits of one checkpoint, so
	// that one worker's output is visible and another's is not.
	BetweenCommits = "between-commits"
	// AfterPartUpload: an object-store sink has uploaded a part of a
	// multipart upload, and no pre-commit that records it has been
	// acknowledged yet (the part belongs to no checkpoint).
	AfterPartUpload = "after-part-upload"
	// BetweenCompletes: between two CompleteMultipartUpload calls of one
	// object-store sink commit, so that one object is visible and the next
	// is not (mid-commit is hit after each completion as well).
	BetweenCompletes = "between-completes"
)

// names are the valid points, sorted.
var names = []string{AfterFlush, AfterPartUpload, AfterPersist, AfterPreCommit, BeforeEndTxn, BetweenCommits, BetweenCompletes, DuringRestore, MidCommit}

// Names returns the names of every crash point, sorted.
func Names() []string { return slices.Clone(names) }

// std is the process-wide table, parsed from Env on first use.
var (
	stdOnce sync.Once
	std     *table
	stdErr  error
)

func load() {
	std, stdErr = parse(os.Getenv(Env))
	if std != nil {
		std.kill = killSelf
	}
}

// Validate parses Env and reports a malformed value, naming the variable.
// Calling it is optional; Hit parses the same value on first use.
func Validate() error {
	stdOnce.Do(load)
	return stdErr
}

// Hit marks that the point name was reached. If Env selects name and this
// is the selected hit, the process kills itself with SIGKILL and Hit never
// returns. Otherwise it returns at once.
func Hit(name string) {
	stdOnce.Do(load)
	if stdErr != nil {
		panic(stdErr)
	}
	std.hit(name)
}

// table is a parsed Env value with its hit counters.
type table struct {
	armed  atomic.Bool       // some point is selected; false makes hit free
	points map[string]*point // by name
	kill   func(name string) // does not return in production; tests replace it
}

type point struct {
	at   uint64        // crash on this hit, counting from 1
	hits atomic.Uint64 // hits so far
}

func (t *table) hit(name string) {
	if !t.armed.Load() {
		return
	}
	p := t.points[name]
	if p == nil {
		return
	}
	if p.hits.Add(1) == p.at {
		t.kill(name)
	}
}

// parse reads an Env value: comma-separated name or name:N entries.
func parse(value string) (*table, error) {
	t := &table{points: make(map[string]*point)}
	if strings.TrimSpace(value) == "" {
		return t, nil
	}
	for entry := range strings.SplitSeq(value, ",") {
		entry = strings.TrimSpace(entry)
		name, count, hasCount := strings.Cut(entry, ":")
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("%s=%q: unknown crash point %q (known: %s)",
				Env, value, name, strings.Join(names, ", "))
		}
		at := uint64(1)
		if hasCount {
			n, err := strconv.ParseUint(count, 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("%s=%q: %q: the count after ':' must be a whole number from 1", Env, value, entry)
			}
			at = n
		}
		if _, dup := t.points[name]; dup {
			return nil, fmt.Errorf("%s=%q: crash point %q given twice", Env, value, name)
		}
		t.points[name] = &point{at: at}
	}
	t.armed.Store(len(t.points) > 0)
	return t, nil
}

// stderrLog writes straight to stderr, synchronously, whatever the
// process's global logger does: the line must be out before the kill.
var stderrLog = zerolog.New(os.Stderr).With().Timestamp().Logger()

// killSelf logs, sends SIGKILL to this process and never returns.
func killSelf(name string) {
	stderrLog.WithLevel(zerolog.ErrorLevel).Str("crash_point", name).
		Msgf("crash point %s reached: SIGKILL", name)
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
		// Cannot happen for a process signalling itself; exit without
		// cleanup all the same.
		stderrLog.WithLevel(zerolog.ErrorLevel).Err(err).Msg("crash point: SIGKILL failed, exiting")
		os.Exit(137)
	}
	// The kernel ends the process; until then nothing else of ours runs on
	// this goroutine. Sleeping, not select{}, keeps the runtime's deadlock
	// detector quiet if every other goroutine happens to be blocked.
	for {
		time.Sleep(time.Hour)
	}
}
