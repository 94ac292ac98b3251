package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/group"
)

func init() {
	register("checkpoints", command{
		summary: "list the completed checkpoints of a stopped job, or show one",
		run:     runCheckpoints,
	})
}

const checkpointsUsage = `usage: connector checkpoints list --config FILE [--slot K] [--json]
       connector checkpoints show --config FILE [--slot K] [ID]

list  prints every checkpoint on disk, oldest first, with its status
show  prints checkpoint ID (default: the newest restorable one) as JSON

With checkpoint.storage set, the storage's checkpoints newer than the local
directory's are brought into it first, as the job's start does: both show
what the job would restore. When the storage cannot be read they say so
(a warning on stderr) and show the local directory only.

The checkpoint store is locked while the job runs; ask the running job's
HTTP API (GET /api/checkpoints) instead. In group mode (instances.mode:
group) each slot has its own checkpoints: name the slot with --slot.
`

// runCheckpoints: connector checkpoints list|show ...
func runCheckpoints(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, checkpointsUsage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		return runCheckpointsList(ctx, args[1:], stdout, stderr)
	case "show":
		return runCheckpointsShow(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, checkpointsUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "connector checkpoints: unknown subcommand %q\n", args[0])
	fmt.Fprint(stderr, checkpointsUsage)
	return exitUsage
}

// runCheckpointsList: connector checkpoints list --config FILE [--json]
func runCheckpointsList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("checkpoints list", "--config FILE [--slot K] [--json]", stdout, stderr)
	path := configFlag(fs)
	slot := slotFlag(fs)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	st, code, ok := openStore(ctx, *path, *slot, "list", stderr)
	if !ok {
		return code
	}
	rows := []checkpointRow{} // "[]", not "null", in --json
	if st != nil {
		defer st.Close()
		var err error
		if rows, err = listRows(st.Store); err != nil {
			fmt.Fprintf(stderr, "connector checkpoints list: %v\n", err)
			return exitFailure
		}
	}
	if *asJSON {
		return printJSON(stdout, stderr, "list", rows)
	}
	printTable(stdout, rows)
	return exitOK
}

// runCheckpointsShow: connector checkpoints show --config FILE [ID]
func runCheckpointsShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("checkpoints show", "--config FILE [--slot K] [ID]", stdout, stderr)
	path := configFlag(fs)
	slot := slotFlag(fs)
	idArg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	var id checkpoint.ID
	if idArg != "" {
		n, err := strconv.ParseUint(idArg, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "connector checkpoints show: checkpoint id %q is not a number\n", idArg)
			fs.Usage()
			return exitUsage
		}
		id = checkpoint.ID(n)
	}
	st, code, ok := openStore(ctx, *path, *slot, "show", stderr)
	if !ok {
		return code
	}
	if st == nil {
		fmt.Fprintln(stderr, "connector checkpoints show: no checkpoint: the checkpoint dir does not exist")
		return exitFailure
	}
	defer st.Close()
	var md *checkpoint.Metadata
	var err error
	if idArg != "" {
		md, err = st.Load(id)
	} else if md, _, err = st.LoadLatest(); err == nil && md == nil {
		fmt.Fprintln(stderr, "connector checkpoints show: no restorable checkpoint")
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(stderr, "connector checkpoints show: %v\n", err)
		return exitFailure
	}
	return printJSON(stdout, stderr, "show", showable(md))
}

// parseOneArg parses flags placed before or after at most one positional
// argument, which it returns ("" if absent).
func parseOneArg(fs *flag.FlagSet, args []string) (arg string, code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", exitOK, false
		}
		return "", exitUsage, false
	}
	if answeredHelp(fs) {
		return "", exitOK, false
	}
	if fs.NArg() == 0 {
		return "", exitOK, true
	}
	arg = fs.Arg(0)
	if code, ok := parseFlags(fs, fs.Args()[1:]); !ok {
		return "", code, false
	}
	return arg, exitOK, true
}

// openStore opens the checkpoint store of the job configured at path. It
// returns a nil store, and ok, when the checkpoint dir does not exist (and
// checkpoint storage, if set, holds nothing): Open would create it, and a
// read-only command should leave no trace.
func openStore(ctx context.Context, path string, slot int, sub string, stderr io.Writer) (st *lockedStore, code int, ok bool) {
	return openStoreFor(ctx, path, slot, "connector checkpoints "+sub, "Stop it first, or ask the running job: GET http://%s/api/checkpoints", false, stderr)
}

// lockedStore is a checkpoint store a command opened and, in group mode,
// the lock of its slot, which a member takes before the slot's store: a
// member given the slot meanwhile waits for it, as for a handover. Holding
// the store's lock alone, the command made that member find the store
// locked, fail for good, and leave its group.
type lockedStore struct {
	*store.Store
	slot io.Closer // the slot's lock (group mode), the mode lock shared (single mode)
	// localOnly: checkpoint.storage is set but could not be read; the
	// store shows the local directories only (a warning said so).
	localOnly bool
}

// Close closes the store, then releases the slot.
func (s *lockedStore) Close() error {
	err := s.Store.Close()
	if s.slot != nil {
		_ = s.slot.Close()
	}
	return err
}

// openStoreFor is openStore for command cmd, whose hint (given the job's
// HTTP address) says what to do while the job runs; slot is --slot.
//
// With checkpoint.storage set, it attaches the storage as the job's start
// does (store.AttachRemote), under the command's locks: the storage's
// checkpoints newer than the local directory's come down into it (what the
// job's next start would download), so that the store shows the checkpoint
// the job would restore. Nothing is written to or deleted from the storage
// (readOnlyRemote). A config error (bucket, credentials) exits 2 naming the
// key; a storage that cannot be read fails the command if strict (txns
// abort, commit: they must not judge against an older checkpoint), and
// otherwise is warned about, the store showing the local directory only.
func openStoreFor(ctx context.Context, path string, slot int, cmd, hint string, strict bool, stderr io.Writer) (st *lockedStore, code int, ok bool) {
	whole, ok := loadJob(path, stderr)
	if !ok {
		return nil, exitUsage, false
	}
	job, ok := jobOfSlot(whole, slot, cmd, stderr)
	if !ok {
		return nil, exitUsage, false
	}
	dir := job.Checkpoint.Dir
	remote, code, ok := openStorage(ctx, job, cmd, strict, stderr)
	if !ok {
		return nil, code, false
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && (remote == nil || remote.empty(ctx)) {
		fmt.Fprintf(stderr, "%s: no checkpoints: %s does not exist\n", cmd, dir)
		return nil, exitOK, true
	}
	st = &lockedStore{localOnly: job.Checkpoint.Storage != "" && remote == nil}
	if !whole.Instances.Group() {
		// A single-mode process holds its store's lock only while an
		// attempt runs; between attempts (a restart's backoff) the store
		// was free, and a command holding it then made the next attempt
		// fail for good. The process's mode lock is held for its life:
		// taken shared here, it is refused while the process lives.
		l, err := store.LockMode(dir, true)
		if err != nil {
			if lockedByOther(err) {
				fmt.Fprintf(stderr, "%s: the job is running (its process holds %s): "+hint+"\n(%v)\n", cmd, dir, job.HTTP.Addr, err)
			} else {
				fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
			}
			return nil, exitFailure, false
		}
		st.slot = l
	} else {
		l, err := store.Lock(vfs.Default, group.LockPath(whole, slot))
		if err != nil {
			if lockedByOther(err) {
				fmt.Fprintf(stderr, "%s: slot %d is run by a member of the job's group (or another command holds it): ask the member that runs it, GET http://%s/api/checkpoints\n(%v)\n", cmd, slot, whole.HTTP.Addr, err)
			} else {
				fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
			}
			return nil, exitFailure, false
		}
		st.slot = l
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}})
	var err error
	st.Store, err = store.Open(vfs.Default, dir, job.State.Dir, job.Checkpoint.Retained, logger)
	if err != nil {
		if st.slot != nil {
			_ = st.slot.Close()
		}
		if lockedByOther(err) {
			fmt.Fprintf(stderr, "%s: checkpoint dir %s is locked: is the job running?\n"+hint+"\n(%v)\n",
				cmd, dir, job.HTTP.Addr, err)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		}
		return nil, exitFailure, false
	}
	if remote != nil {
		if err := st.AttachRemote(ctx, remote); err != nil {
			if code, ok := storageFailed(cmd, remote.String(), strict, err, stderr); !ok {
				_ = st.Close()
				return nil, code, false
			}
			st.localOnly = true // AttachRemote left the store as it was
		}
	}
	return st, exitOK, true
}

// lockedByOther reports whether Open failed because another process holds
// the store's lock.
func lockedByOther(err error) bool { return errors.Is(err, store.ErrLocked) }

// checkpointRow is one line of `checkpoints list`, and one object of its
// --json output.
type checkpointRow struct {
	ID         checkpoint.ID `json:"id"`
	Timestamp  string        `json:"timestamp,omitempty"` // RFC 3339; empty when the metadata does not verify
	Tasks      *int          `json:"tasks,omitempty"`     // nil when the metadata cannot be loaded
	StateFiles int           `json:"state_files"`
	StateBytes int64         `json:"state_bytes"`
	MetaBytes  int64         `json:"meta_bytes"`
	Missing    int           `json:"missing_files"`
	Status     string        `json:"status"` // "ok" or "corrupt"
	Error      string        `json:"error,omitempty"`
}

func listRows(st *store.Store) ([]checkpointRow, error) {
	infos, err := st.List()
	if err != nil {
		return nil, err
	}
	rows := make([]checkpointRow, 0, len(infos))
	for _, info := range infos {
		row := checkpointRow{
			ID:         info.ID,
			StateFiles: info.Files,
			StateBytes: info.StateBytes,
			MetaBytes:  info.MetaBytes,
			Missing:    info.Missing,
			Status:     "ok",
		}
		if !info.Timestamp.IsZero() {
			row.Timestamp = info.Timestamp.Format(time.RFC3339)
		}
		if info.Err != nil {
			row.Status, row.Error = "corrupt", info.Err.Error()
		} else {
			// Info does not count tasks; the metadata does.
			md, err := st.Load(info.ID)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %d: %w", info.ID, err)
			}
			n := len(md.Tasks)
			row.Tasks = &n
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func printTable(w io.Writer, rows []checkpointRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIMESTAMP\tTASKS\tSTATE FILES\tBYTES\tSTATUS")
	for _, r := range rows {
		ts, tasks, status := orDash(r.Timestamp), "-", r.Status
		if r.Tasks != nil {
			tasks = strconv.Itoa(*r.Tasks)
		}
		if r.Error != "" {
			status += ": " + r.Error
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", r.ID, ts, tasks, r.StateFiles, r.StateBytes, status)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shownMetadata is checkpoint.Metadata for people: each task's Data inline
// when it is JSON (offsets, worker handles), base64 otherwise.
type shownMetadata struct {
	ID        checkpoint.ID                       `json:"id"`
	Timestamp time.Time                           `json:"timestamp"`
	Tasks     map[checkpoint.TaskID]shownSnapshot `json:"tasks"`
}

type shownSnapshot struct {
	Data       json.RawMessage `json:"data,omitempty"`
	DataBase64 []byte          `json:"data_base64,omitempty"` // encoding/json writes []byte as base64
	Files      []string        `json:"files,omitempty"`
}

func showable(md *checkpoint.Metadata) shownMetadata {
	out := shownMetadata{ID: md.ID, Timestamp: md.Timestamp, Tasks: make(map[checkpoint.TaskID]shownSnapshot, len(md.Tasks))}
	for task, snap := range md.Tasks {
		s := shownSnapshot{Files: snap.Files}
		if json.Valid(snap.Data) {
			s.Data = snap.Data
		} else if len(snap.Data) > 0 {
			s.DataBase64 = snap.Data
		}
		out.Tasks[task] = s
	}
	return out
}

func printJSON(stdout, stderr io.Writer, sub string, v any) int {
	buf, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "connector checkpoints %s: encode: %v\n", sub, err)
		return exitFailure
	}
	stdout.Write(append(buf, '\n'))
	return exitOK
}
