package kafka

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// This file is what `connector txns` does with a stopped job's
// transactions: list them with what the restorable checkpoint says about
// them, abort a lingering one that no completed checkpoint needs, commit
// one that the checkpoint needs. The caller holds the job's checkpoint
// store (its lock), so the job is not running meanwhile.

// TxnState is one transactional id of the job, as the brokers describe it,
// with what the restorable checkpoint says about it.
type TxnState struct {
	ID         string        `json:"id"`
	Writer     int           `json:"writer"`
	State      string        `json:"state"` // the broker's: Empty, Ongoing, PrepareCommit, CompleteCommit, CompleteAbort, ...
	ProducerID int64         `json:"producer_id"`
	Epoch      int16         `json:"epoch"`
	Age        time.Duration `json:"age_ns"` // since the open transaction began; 0 if none is open
	Timeout    time.Duration `json:"timeout_ns"`
	Partitions []string      `json:"partitions,omitempty"` // of the open transaction: topic/partition
	// Checkpoint is the restorable checkpoint whose output is in this id's
	// open transaction (same producer id); 0: none.
	Checkpoint checkpoint.ID `json:"checkpoint,omitempty"`
	// Needed: that output is not committed yet (the writer's marker is
	// below Checkpoint). Aborting is refused; `txns commit` or a restart
	// commits it.
	Needed bool   `json:"needed,omitempty"`
	Err    string `json:"error,omitempty"`
}

// Open reports whether the broker holds a transaction open on the id.
func (t TxnState) Open() bool {
	switch t.State {
	case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return true
	}
	return false
}

// parseTxnID reads a transactional id of job: <job>-w<writer>-t<slot> or
// <job>-w<writer>-r. Ids of other jobs (even one named <job>-w1) are not.
func parseTxnID(job, id string) (writer int, ok bool) {
	rest, ok := strings.CutPrefix(id, job+"-w")
	if !ok {
		return 0, false
	}
	num, kind, ok := strings.Cut(rest, "-")
	if !ok || !digits(num) {
		return 0, false
	}
	if kind != "r" && (!strings.HasPrefix(kind, "t") || !digits(kind[1:])) {
		return 0, false
	}
	w, err := strconv.Atoi(num)
	return w, err == nil
}

// digits: s is a decimal number without sign or leading zero.
func digits(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// listJobTxns returns the transactional ids of the job the brokers know.
func (s *Sink) listJobTxns(ctx context.Context) ([]string, error) {
	// Kafka 4.1+ filters by pattern (KIP-1152); older brokers list all.
	listed, err := s.adm.ListTransactionsByTxPattern(ctx, nil, nil, "^"+regexp.QuoteMeta(s.job)+`-w[0-9]+-(t[0-9]+|r)$`)
	if err != nil {
		listed, err = s.adm.ListTransactions(ctx, nil, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	var ids []string
	for _, t := range listed.Sorted() {
		if _, ok := parseTxnID(s.job, t.TxnID); ok {
			ids = append(ids, t.TxnID)
		}
	}
	return ids, nil
}

// Transactions describes every transactional id of the job the brokers
// know, against the committables of the restorable checkpoint.
func (s *Sink) Transactions(ctx context.Context, restored []sink.Committable) ([]TxnState, error) {
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	progress, err := s.readProgress(ctx, false)
	if err != nil {
		return nil, err
	}
	ids, err := s.listJobTxns(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	described, err := s.adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	refs, err := referenced(restored)
	if err != nil {
		return nil, err
	}
	out := make([]TxnState, 0, len(described))
	for _, d := range described.Sorted() {
		w, _ := parseTxnID(s.job, d.TxnID)
		t := TxnState{ID: d.TxnID, Writer: w, State: d.State, ProducerID: d.ProducerID, Epoch: d.ProducerEpoch,
			Timeout: time.Duration(d.TimeoutMillis) * time.Millisecond}
		if d.Err != nil {
			t.Err = d.Err.Error()
		}
		if t.Open() && d.StartTimestamp > 0 {
			t.Age = time.Since(time.UnixMilli(d.StartTimestamp))
			for topic, parts := range d.Topics {
				for p := range parts {
					t.Partitions = append(t.Partitions, topic+"/"+strconv.Itoa(int(p)))
				}
			}
			slices.Sort(t.Partitions)
		}
		if c, ok := refs[refKey{d.TxnID, d.ProducerID}]; ok && t.Open() {
			t.Checkpoint = c.Checkpoint
			t.Needed = progress[c.Writer] < c.Checkpoint
		}
		out = append(out, t)
	}
	return out, nil
}

type refKey struct {
	txn string
	pid int64
}

// referenced maps each transaction the committables name to the latest
// committable naming it.
func referenced(cs []sink.Committable) (map[refKey]sink.Committable, error) {
	out := map[refKey]sink.Committable{}
	for _, c := range cs {
		seg, err := decodeSegment(c)
		if err != nil {
			return nil, err
		}
		k := refKey{seg.TxnID, seg.ProducerID}
		if prev, ok := out[k]; !ok || prev.Checkpoint < c.Checkpoint {
			out[k] = c
		}
	}
	return out, nil
}

// AbortTxn aborts the open transaction of id, one of the job's. It refuses
// when the restorable checkpoint still needs that transaction's output
// committed, and does nothing to an id with no open transaction.
func (s *Sink) AbortTxn(ctx context.Context, restored []sink.Committable, id string) (TxnState, error) {
	t, err := s.one(ctx, restored, id)
	if err != nil {
		return t, err
	}
	if t.Needed {
		return t, fmt.Errorf("transaction %s holds the output of checkpoint %d, which completed and is not committed yet: aborting is refused; commit it (connector txns commit) or start the job, which commits it", id, t.Checkpoint)
	}
	if !t.Open() {
		return t, nil
	}
	if err := s.abortID(ctx, id); err != nil {
		return t, err
	}
	return t, nil
}

// CommitTxn makes the output that the restorable checkpoint needs from the
// open transaction of id visible, as a restart does: the transaction is
// aborted and its records are produced again from the log in a new
// transaction that carries the writer's progress marker. It refuses an id
// whose open transaction no completed checkpoint needs (its records belong
// to a checkpoint that did not complete: abort it), and one while an
// earlier checkpoint's transaction of the same writer is still needed: the
// marker says the writer's output is committed up to a checkpoint, so
// committing the later one first would count the earlier one's records as
// committed, and nothing would ever make them visible.
func (s *Sink) CommitTxn(ctx context.Context, restored []sink.Committable, id string) (TxnState, error) {
	t, err := s.one(ctx, restored, id)
	if err != nil {
		return t, err
	}
	if !t.Needed {
		why := "no transaction is open on it"
		if t.Open() {
			why = "no completed checkpoint needs its open transaction (its records belong to a checkpoint that did not complete; the restart writes them again): abort it"
		}
		return t, fmt.Errorf("transaction %s: nothing to commit: %s", id, why)
	}
	all, err := s.Transactions(ctx, restored)
	if err != nil {
		return t, err
	}
	for _, o := range all {
		if o.Writer == t.Writer && o.Needed && o.Checkpoint < t.Checkpoint {
			return t, fmt.Errorf("transaction %s holds the output of checkpoint %d, and %s that of checkpoint %d, of the same writer, not committed yet: commit %s first (a writer's output is committed in checkpoint order), or start the job, which commits both",
				id, t.Checkpoint, o.ID, o.Checkpoint, o.ID)
		}
	}
	if err := s.abortID(ctx, id); err != nil {
		return t, err
	}
	cs := slices.Clone(restored)
	slices.SortFunc(cs, func(a, b sink.Committable) int { return int(int64(a.Checkpoint) - int64(b.Checkpoint)) })
	for _, c := range cs {
		seg, err := decodeSegment(c)
		if err != nil {
			return t, err
		}
		if seg.TxnID == id && seg.ProducerID == t.ProducerID && s.committed(c.Writer) < c.Checkpoint {
			if err := s.reproduce(ctx, c); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// one describes id, which must be one of the job's transactional ids.
func (s *Sink) one(ctx context.Context, restored []sink.Committable, id string) (TxnState, error) {
	if _, ok := parseTxnID(s.job, id); !ok {
		return TxnState{ID: id}, fmt.Errorf("%q is not a transactional id of job %s (they are %s-w<writer>-t<slot> and %s-w<writer>-r)", id, s.job, s.job, s.job)
	}
	all, err := s.Transactions(ctx, restored)
	if err != nil {
		return TxnState{ID: id}, err
	}
	for _, t := range all {
		if t.ID == id {
			progress, err := s.readProgress(ctx, false)
			if err != nil {
				return t, err
			}
			s.mu.Lock()
			s.progress = progress
			s.mu.Unlock()
			return t, nil
		}
	}
	return TxnState{ID: id}, fmt.Errorf("the brokers know no transactional id %s", id)
}

// abortWait bounds one initialisation of a transactional id (abortID).
const abortWait = 20 * time.Second

// abortID aborts the open transaction of id by initialising the id.
func (s *Sink) abortID(ctx context.Context, id string) error {
	if err := s.initID(ctx, id); err != nil {
		return fmt.Errorf("abort the open transaction of %s: %w", id, err)
	}
	s.stats.aborts.Add(1)
	s.log.Info().Str("txn", id).Msg("kafka sink: aborted a transaction left open")
	return nil
}

// initID initialises the transactional id id (InitProducerID): a
// transaction open on it is aborted (one already committing is waited
// for), and every producer that initialised it before is fenced.
func (s *Sink) initID(ctx context.Context, id string) error {
	cl, err := s.client(id)
	if err != nil {
		return err
	}
	defer cl.Close()
	// franz-go retries CONCURRENT_TRANSACTIONS (the coordinator still
	// ending the transaction) without end or log until ctx ends: bounded,
	// so that a transaction that does not end is said and looked at again.
	ictx, cancel := context.WithTimeout(ctx, abortWait)
	defer cancel()
	if _, _, err := cl.ProducerID(ictx); err != nil {
		if ictx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("the coordinator did not end it within %v: %w", abortWait, err)
		}
		return err
	}
	return nil
}
