package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/pipeline"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/kafka"
)

func init() {
	register("txns", command{
		summary: "list a stopped job's Kafka transactions, abort or commit a lingering one",
		run:     runTxns,
	})
}

const txnsUsage = `usage: connector txns list   --config FILE [--slot K] [--dead-letters] [--json]
       connector txns abort  --config FILE [--slot K] [--dead-letters] TXN_ID
       connector txns commit --config FILE [--slot K] [--dead-letters] TXN_ID

For a job with sink.type: kafka, stopped (its checkpoint dir is locked
while it runs); in group mode, one slot's job, named with --slot. With
--dead-letters, the transactions of the job's dead-letter topic instead
(pipeline.on_decode_error: dead_letter with checkpoint.mode exactly_once,
any sink type; ids <job>:dlq-w<worker>-t<n>).

list    every transactional id of the job the brokers know: state, producer
        id and epoch, age of the open transaction, and the completed
        checkpoint whose output it holds ("needed": not committed yet)
abort   abort the open transaction of TXN_ID; refused if a completed
        checkpoint needs it (commit it instead)
commit  make the output a completed checkpoint needs from TXN_ID's open
        transaction visible, as a restart of the job would; refused if no
        completed checkpoint needs it

A restart of the job does both by itself: it commits what the restored
checkpoint needs and aborts every other open transaction of the job.

With checkpoint.storage set, the storage's checkpoints newer than the local
directory's are brought into it first, as the job's start does, so that
the checkpoint judged against is the one the job would restore. abort and
commit refuse when the storage cannot be read; list warns and shows what
the local directory says.
`

// runTxns: connector txns list|abort|commit ...
func runTxns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, txnsUsage)
		return exitUsage
	}
	sub := args[0]
	switch sub {
	case "list", "abort", "commit":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, txnsUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "connector txns: unknown subcommand %q\n", sub)
		fmt.Fprint(stderr, txnsUsage)
		return exitUsage
	}
	usage := map[bool]string{true: "--config FILE [--slot K] [--dead-letters] [--json]", false: "--config FILE [--slot K] [--dead-letters] TXN_ID"}[sub == "list"]
	fs := newFlags("txns "+sub, usage, stdout, stderr)
	path := configFlag(fs)
	slot := slotFlag(fs)
	asJSON := new(bool)
	if sub == "list" {
		asJSON = fs.Bool("json", false, "print a JSON array instead of a table")
	}
	deadLetters := fs.Bool("dead-letters", false, "the transactions of the job's dead-letter topic, not of its kafka sink")
	id, code, ok := parseOneArg(fs, args[1:])
	if !ok {
		return code
	}
	if (sub == "list") != (id == "") {
		fmt.Fprintf(stderr, "connector txns %s: %s\n", sub, map[bool]string{true: "takes no TXN_ID", false: "needs a TXN_ID (see connector txns list)"}[sub == "list"])
		fs.Usage()
		return exitUsage
	}
	job, ok := loadJob(*path, stderr)
	if !ok {
		return exitUsage
	}
	if job, ok = jobOfSlot(job, *slot, "connector txns "+sub, stderr); !ok {
		return exitUsage
	}
	switch {
	case *deadLetters && (job.Pipeline.OnDecodeError.Policy != config.DecodeDeadLetter || job.Checkpoint.Mode != checkpoint.ExactlyOnce):
		fmt.Fprintf(stderr, "connector txns: %s: --dead-letters: dead letters are written in transactions only with pipeline.on_decode_error.policy dead_letter and checkpoint.mode exactly_once\n", *path)
		return exitUsage
	case !*deadLetters && job.Sink.Type != "kafka":
		fmt.Fprintf(stderr, "connector txns: %s: sink.type is %s: only a kafka sink has transactions (the dead-letter topic's: --dead-letters)\n", *path, job.Sink.Type)
		return exitUsage
	}
	// The store's lock keeps the job from starting while this runs.
	// abort and commit must judge against the checkpoint the job would
	// restore: strict about checkpoint.storage.
	st, code, ok := openStoreFor(ctx, *path, *slot, "connector txns "+sub, "Stop it first (%s serves its metrics meanwhile).", sub != "list", stderr)
	if !ok {
		return code
	}
	if st == nil && sub != "list" {
		// Without the checkpoints nothing tells a transaction a completed
		// checkpoint needs from a stray one (a relative checkpoint.dir
		// read from another directory, a volume not mounted).
		fmt.Fprintf(stderr, "connector txns %s: checkpoint.dir %s does not exist here: which transactions the job's checkpoints need cannot be told; run the command where the job's checkpoint.dir is\n", sub, job.Checkpoint.Dir)
		return exitFailure
	}
	var restored []sink.Committable
	checkpointID := "none"
	if st != nil {
		defer st.Close()
		md, skipped, err := st.LoadLatest()
		if err != nil {
			fmt.Fprintf(stderr, "connector txns %s: %v\n", sub, err)
			return exitFailure
		}
		if len(skipped) > 0 && !unrestorableAnswered(job, sub, md, skipped, stderr) {
			return exitFailure
		}
		if md != nil {
			checkpointID = strconv.FormatUint(uint64(md.ID), 10)
			committables := pipeline.Committables
			if *deadLetters {
				committables = pipeline.DeadLetterCommittables
			}
			if restored, err = committables(md); err != nil {
				fmt.Fprintf(stderr, "connector txns %s: %v\n", sub, err)
				return exitFailure
			}
		}
	}
	snk, err := newKafkaSink(job, *deadLetters, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "connector txns %s: %v\n", sub, err)
		return exitFailure
	}
	defer snk.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch sub {
	case "list":
		txns, err := snk.Transactions(ctx, restored)
		if err != nil {
			fmt.Fprintf(stderr, "connector txns list: %v\n", err)
			return exitFailure
		}
		if *asJSON {
			if txns == nil {
				txns = []kafka.TxnState{}
			}
			return printJSON(stdout, stderr, "list", txns)
		}
		if st != nil && st.localOnly {
			checkpointID += " (local directory only: checkpoint storage cannot be read)"
		}
		fmt.Fprintf(stdout, "job %s, restorable checkpoint %s\n", job.Name, checkpointID)
		printTxns(stdout, txns)
		return exitOK
	case "abort":
		t, err := snk.AbortTxn(ctx, restored, id)
		if err != nil {
			fmt.Fprintf(stderr, "connector txns abort: %v\n", err)
			return exitFailure
		}
		if !t.Open() {
			fmt.Fprintf(stdout, "%s: no open transaction (state %s): nothing to abort\n", id, t.State)
		} else {
			fmt.Fprintf(stdout, "%s: aborted its open transaction (producer id %d, epoch %d, open %s)\n", id, t.ProducerID, t.Epoch, t.Age.Round(time.Second))
		}
		return exitOK
	default:
		t, err := snk.CommitTxn(ctx, restored, id)
		if err != nil {
			fmt.Fprintf(stderr, "connector txns commit: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "%s: the output of checkpoint %d is committed\n", id, t.Checkpoint)
		return exitOK
	}
}

// newKafkaSink makes the kafka sink of job, or of its dead-letter topic,
// logging to stderr.
func newKafkaSink(job *config.Job, deadLetters bool, stderr io.Writer) (*kafka.Sink, error) {
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}}).Level(zerolog.WarnLevel)
	if deadLetters {
		return pipeline.DeadLetterSink(job, sink.Env{Log: log})
	}
	return kafka.New(*job.Sink.Config.(*kafka.Config), sink.Env{Job: job, Log: log})
}

func printTxns(w io.Writer, txns []kafka.TxnState) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TXN ID\tSTATE\tPRODUCER ID\tEPOCH\tAGE\tTIMEOUT\tCHECKPOINT\tPARTITIONS")
	for _, t := range txns {
		age, chk := "-", "-"
		if t.Open() {
			age = t.Age.Round(time.Second).String()
		}
		if t.Checkpoint != 0 {
			chk = strconv.FormatUint(uint64(t.Checkpoint), 10)
			if t.Needed {
				chk += " (needed)"
			} else {
				chk += " (committed)"
			}
		}
		state := t.State
		if t.Err != "" {
			state += ": " + t.Err
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", t.ID, state, t.ProducerID, t.Epoch, age, t.Timeout, chk, orDash(strings.Join(t.Partitions, ",")))
	}
	tw.Flush()
}

// unrestorableAnswered says what newer checkpoints that cannot be read
// (damaged, a state file missing) mean for txns sub, and whether it may go
// on. Which transactions such a checkpoint needs cannot be told: abort
// could abort its output. Under checkpoint.on_unrestorable: fail the job
// refuses to start, and so does abort; under fall_back the job restores md
// and aborts what md does not need, which abort may then do too. list and
// commit (which commits only what md needs, and an older checkpoint's
// output is committed before a newer one completes) go on, warned.
func unrestorableAnswered(job *config.Job, sub string, md *checkpoint.Metadata, skipped []store.Skipped, stderr io.Writer) bool {
	var names []string
	for _, sk := range skipped {
		names = append(names, fmt.Sprintf("checkpoint %d (%v)", sk.ID, sk.Err))
	}
	judged := "no checkpoint"
	if md != nil {
		judged = fmt.Sprintf("checkpoint %d", md.ID)
	}
	if sub == "abort" && job.Checkpoint.OnUnrestorable != checkpoint.UnrestorableFallBack {
		fmt.Fprintf(stderr, "connector txns abort: refused: newer checkpoints cannot be restored: %s; which transactions they need cannot be told, and the job refuses to start (checkpoint.on_unrestorable: %s). Repair them (`connector checkpoints list`), or set checkpoint.on_unrestorable: fall_back: the job's start then restores %s and aborts what it does not need\n",
			strings.Join(names, "; "), job.Checkpoint.OnUnrestorable, judged)
		return false
	}
	fmt.Fprintf(stderr, "connector txns %s: WARNING: newer checkpoints cannot be restored: %s; judging against %s, which the job restores only with checkpoint.on_unrestorable: fall_back\n",
		sub, strings.Join(names, "; "), judged)
	return true
}
