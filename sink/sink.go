package sink

import (
	"context"
	"encoding/json"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
)

// Committable is what a Writer's PreCommit hands back: small, serialisable
// (it is stored in the checkpoint metadata), and enough for Commit to make the
// pre-committed output visible, or for Recover to recognise it.
type Committable struct {
	// Checkpoint is the barrier at which the output was pre-committed.
	Checkpoint checkpoint.ID `json:"checkpoint"`
	// Writer is the instance (worker index) that produced it.
	Writer int `json:"writer"`
	// Data is sink-specific: file names, a transactional id and epoch, a gid.
	Data json.RawMessage `json:"data"`
}

// Sink is one configured sink of a job: a factory of Writers (one per
// parallel worker) and the committer of their output.
//
// Lifecycle, as the runtime in package pipeline drives it:
//
//  1. Recover(restored) runs once per (re)start of the job, before any
//     Writer opens. restored holds every committable of the checkpoint the job
//     restores from (nil with none). Recover commits them (as Commit does) and
//     then removes or aborts everything of this job that belongs to no
//     completed checkpoint: output written or pre-committed after that
//     checkpoint, which the source will now replay.
//  2. NewWriter(i) for each worker i. Writers are used by one goroutine each.
//  3. After checkpoint n completes (its metadata is durable), Commit receives
//     every committable recorded in n. Commit must be idempotent: after a
//     crash between "complete" and "committed" it runs again with the same
//     committables, and some of them may already be committed.
//  4. Close when the job stops, after the writers are closed.
//
// Commit and Recover may be called from a goroutine other than the writers'.
type Sink interface {
	NewWriter(instance int) (Writer, error)
	Commit(ctx context.Context, cs []Committable) error
	Recover(ctx context.Context, restored []Committable) error
	Close() error
}

// Writer is one parallel instance of a sink, owned by one worker goroutine.
//
// Lifecycle:
//
//  1. Write any number of records. Written output is invisible to readers.
//  2. PreCommit(n) at barrier n: flush and make everything written so far
//     durable but still invisible, and return the committables not yet known
//     to be committed: the one for n (if anything was written) plus those of
//     earlier barriers whose checkpoints failed. A failed checkpoint discards
//     nothing; its output is committed with the next checkpoint that
//     completes. An error declines checkpoint n; the writer stays usable.
//  3. Committed(n) after checkpoint n completed and Commit returned: the
//     writer forgets committables of checkpoints <= n. It may be called from
//     another goroutine, concurrently with Write and PreCommit.
//  4. Close abandons what was written since the last PreCommit; the next
//     Recover removes it.
type Writer interface {
	Write(ctx context.Context, r *record.Record) error
	PreCommit(ctx context.Context, id checkpoint.ID) ([]Committable, error)
	Committed(id checkpoint.ID)
	Close() error
}

// AsyncPreCommitter is implemented by writers whose pre-commit can finish
// in the background, so that the owner goes on writing while the output of
// barrier n becomes durable (Flink's asynchronous snapshot phase).
//
// PreCommitAsync(n) is the synchronous part: it closes off everything
// written so far (later Writes go to new output) and returns finish, which
// makes n's output durable and returns the committables PreCommit(n) would
// return (some sinks know them only then: offsets a broker assigned). The
// owner calls finish once, on any goroutine, and may Write meanwhile; it
// acknowledges n only after finish returned, and calls neither
// PreCommitAsync, PreCommit nor Close before finish returned. If finish
// fails with ErrNotDurable, n must be declined: its output is carried to
// the next pre-commit as after a failed PreCommit; any other error (ErrLost)
// fails the task.
type AsyncPreCommitter interface {
	PreCommitAsync(ctx context.Context, id checkpoint.ID) (finish func() ([]Committable, error), err error)
}

// InputEnder is implemented by writers that keep output open across
// checkpoints (a file that grows over many checkpoints and becomes visible
// when it rolls). The owner calls EndInput before the pre-commit of the
// job's final checkpoint (the stop): no record follows, so that pre-commit
// closes off everything written and the commit of the checkpoint makes it
// all visible. Writes after EndInput are a caller bug.
type InputEnder interface {
	EndInput()
}

// Batcher is implemented by writers that save per-record work when told a
// batch of Writes follows: the file sink reads its clock (for roll_age) once
// per batch instead of once per record. The owner calls BeginBatch right
// before each batch's Writes; a writer never told keeps working per record.
type Batcher interface {
	BeginBatch()
}

// StatsReporter is implemented by sinks that count what they write, for
// the job's metrics. Stats may be called from any goroutine, concurrently
// with every other method, until Close. The counts start at zero when the
// sink is made (at every start of the job); the runtime keeps them adding
// up across restarts.
type StatsReporter interface {
	Stats() Stats
}

// Stats are a sink's counts since it was made.
type Stats struct {
	// BytesWritten is the output written so far, visible or not yet (an
	// output discarded at a restart was counted when written).
	BytesWritten uint64
	// FilesCommitted is how many files (or objects) Commit and Recover
	// made visible; a file committed before is not counted again.
	FilesCommitted uint64
	// RecordsWritten is how many records went to the output (visible or
	// not yet), for sinks that count them by record.
	RecordsWritten uint64
	// TransactionsCommitted and TransactionsAborted count the
	// transactions of transactional sinks.
	TransactionsCommitted, TransactionsAborted uint64
	// OldestOpenTransaction is how long the oldest transaction still open
	// has been (0: none); a transaction older than TransactionTimeout is
	// aborted by the broker.
	OldestOpenTransaction time.Duration
	// TransactionTimeout is the transactions' timeout (0: the sink has
	// none), so alerts can compare OldestOpenTransaction with it.
	TransactionTimeout time.Duration
}

// Auditor is implemented by sinks that can tell what their committed output
// holds. CommittedAfter lists output that checkpoints after id made visible
// (file names, for a message). The runtime asks it before restoring an
// older checkpoint than the newest on disk (when the newest is damaged):
// output of a later checkpoint would then be written again.
type Auditor interface {
	CommittedAfter(ctx context.Context, id checkpoint.ID) ([]string, error)
}
