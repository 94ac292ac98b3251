package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/sink"
)

// Sink is the kafka sink. Commit and Recover may be called from any
// goroutine, not concurrently with each other; each Writer belongs to one
// goroutine. See the package documentation for the protocol.
type Sink struct {
	cfg  Config
	job  string
	conn config.Kafka
	// reached: a call to the cluster succeeded (retry), in this sink or
	// in one of an earlier attempt (sink.Env.Reached): refusals are
	// misconfigurations only before.
	reached *atomic.Bool
	// timeout is the transactions' timeout: cfg's, or the brokers'
	// maximum below it with cfg.FitTimeout (prepare), in ns.
	timeout atomic.Int64
	slots   int // transactional ids per writer
	log     zerolog.Logger

	admin *kgo.Client
	adm   *kadm.Client
	hooks func(client string) []kgo.Hook // metrics of the clients; may be nil

	// Known after Recover (prepare): the topic's ID for the progress
	// markers.
	topicID kadm.TopicID
	// unstableSince is when Recover's stable read of the markers began to
	// answer UNSTABLE_OFFSET_COMMIT with none of the job's transactions
	// open (zero: it does not); Recover's goroutine only.
	unstableSince time.Time
	// markerWait bounds one look for a restored segment's end markers
	// (readSegment): segmentReadWait, shorter in tests.
	markerWait time.Duration

	mu       sync.Mutex
	writers  map[int]*writer
	open     map[string]*txn        // pre-committed transactions this process holds, by segment key
	progress map[int]checkpoint.ID  // each writer's last committed checkpoint
	topics   map[string]cachedTopic // output topics looked up
	stats    struct{ commits, aborts atomic.Uint64 }
	closed   struct{ records, bytes uint64 } // what closed writers wrote
}

var (
	_ sink.Sink          = (*Sink)(nil)
	_ sink.Auditor       = (*Sink)(nil)
	_ sink.StatsReporter = (*Sink)(nil)
)

// New makes the sink; it does not contact the cluster (Recover does).
func New(cfg Config, env sink.Env) (*Sink, error) {
	conn := cfg.cluster(env.Job)
	opts := append(kafkaclient.Opts(conn, env.Log), kgo.RequestTimeoutOverhead(10*time.Second))
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, cfgkey.Wrap(cfg.section(), fmt.Errorf("%w: kafka sink: %w", sink.ErrInvalidConfig, err))
	}
	c := env.Job.Checkpoint
	reached := env.Reached
	if reached == nil {
		reached = new(atomic.Bool)
	}
	s := &Sink{
		reached: reached,
		cfg:     cfg, job: env.Job.Name, conn: conn, log: env.Log.With().Str("sink", "kafka").Str("topic", cfg.Topic).Logger(),
		// The current transaction, the pre-committed ones awaiting their
		// checkpoint (up to max_concurrent), and those of failed
		// checkpoints carried to the next (up to tolerable_failures).
		slots: c.TolerableFailures + c.MaxConcurrent + 2,
		admin: admin, adm: kadm.NewClient(admin), hooks: env.KafkaHooks,
		writers: map[int]*writer{}, open: map[string]*txn{}, progress: map[int]checkpoint.ID{}, topics: map[string]cachedTopic{},
	}
	s.timeout.Store(int64(cfg.TransactionTimeout))
	return s, nil
}

// txnID is the transactional id of one slot of one writer: a bounded set
// per job, reused, stable across restarts.
func (s *Sink) txnID(writer, slot int) string {
	return s.job + "-w" + strconv.Itoa(writer) + "-t" + strconv.Itoa(slot)
}

// recoveryID is the transactional id that produces writer's transactions
// again after a restart (recover.go).
func (s *Sink) recoveryID(writer int) string {
	return s.job + "-w" + strconv.Itoa(writer) + "-r"
}

// client makes a client for transactional id id.
func (s *Sink) client(id string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append(kafkaclient.Opts(s.conn, s.log),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(time.Duration(s.timeout.Load())),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codecs[s.cfg.Compression]),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytesFn(s.batchLimit),
	)
	if s.cfg.Partitioning == PartitionSameInput {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if s.hooks != nil {
		opts = append(opts, kgo.WithHooks(s.hooks("sink-"+strings.TrimPrefix(id, s.job+"-"))...))
	}
	return kgo.NewClient(append(opts, extra...)...)
}

// batchLimit is the largest batch for topic: its max.message.bytes when
// known (batches above it are refused whole), else franz-go's default.
func (s *Sink) batchLimit(topic string) int32 {
	s.mu.Lock()
	c, ok := s.topics[topic]
	s.mu.Unlock()
	if ok && c.info.maxBytes > 0 {
		return int32(min(c.info.maxBytes, maxProduceBytes))
	}
	return maxProduceBytes
}

// NewWriter opens the writer of worker instance.
func (s *Sink) NewWriter(instance int) (sink.Writer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, open := s.writers[instance]; open {
		return nil, fmt.Errorf("kafka sink: writer %d is already open", instance)
	}
	w := newWriter(s, instance)
	s.writers[instance] = w
	return w, nil
}

func segmentKey(c sink.Committable) string {
	return strconv.Itoa(c.Writer) + "/" + strconv.FormatUint(uint64(c.Checkpoint), 10)
}

// Commit commits the transactions of cs, each writer's in checkpoint order
// (its markers only grow). A transaction whose marker shows it committed is
// skipped; one this process still holds is committed (EndTxn); any other
// (after a restart) is produced again from the log (recover.go).
func (s *Sink) Commit(ctx context.Context, cs []sink.Committable) error {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b sink.Committable) int {
		if a.Writer != b.Writer {
			return a.Writer - b.Writer
		}
		return int(int64(a.Checkpoint) - int64(b.Checkpoint))
	})
	for i, c := range cs {
		if i > 0 && cs[i-1].Writer != c.Writer {
			crashpoint.Hit(crashpoint.BetweenCommits)
		}
		if err := s.commitOne(ctx, c); err != nil {
			return fmt.Errorf("kafka sink commit checkpoint %d writer %d: %w: %w", c.Checkpoint, c.Writer, sink.ErrCommitFailed, err)
		}
	}
	return nil
}

func (s *Sink) commitOne(ctx context.Context, c sink.Committable) error {
	s.mu.Lock()
	done := s.progress[c.Writer] >= c.Checkpoint
	t := s.open[segmentKey(c)]
	s.mu.Unlock()
	if done {
		return nil
	}
	if t == nil {
		return s.reproduce(ctx, c)
	}
	crashpoint.Hit(crashpoint.BeforeEndTxn)
	if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction %s: %w", t.id, err)
	}
	s.stats.commits.Add(1)
	s.mu.Lock()
	s.progress[c.Writer] = c.Checkpoint
	delete(s.open, segmentKey(c))
	s.mu.Unlock()
	return nil
}

// setProgress notes that writer committed checkpoint id.
func (s *Sink) setProgress(writer int, id checkpoint.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id > s.progress[writer] {
		s.progress[writer] = id
	}
}

// committed is writer's last committed checkpoint, as last read or made.
func (s *Sink) committed(writer int) checkpoint.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress[writer]
}

// CommittedAfter lists the writers whose committed output goes past
// checkpoint id. It waits while the cluster is unreachable (the runtime
// asks before Recover, at every start).
func (s *Sink) CommittedAfter(ctx context.Context, id checkpoint.ID) ([]string, error) {
	var progress map[int]checkpoint.ID
	err := s.retry(ctx, "at start", func() error {
		var err error
		progress, err = s.readProgress(ctx, false)
		return unreachable(err)
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for w, n := range progress {
		if n > id {
			out = append(out, fmt.Sprintf("writer %d committed checkpoint %d (group %s)", w, n, progressGroup(s.job, w)))
		}
	}
	slices.Sort(out)
	return out, nil
}

// Stats counts what the sink produced and committed since it was made.
func (s *Sink) Stats() sink.Stats {
	st := sink.Stats{
		TransactionsCommitted: s.stats.commits.Load(),
		TransactionsAborted:   s.stats.aborts.Load(),
		TransactionTimeout:    time.Duration(s.timeout.Load()),
	}
	var oldest time.Time
	note := func(t *txn) {
		if t != nil && (oldest.IsZero() || t.began.Before(oldest)) {
			oldest = t.began
		}
	}
	// The writers' locks are taken only after the sink's is released, so
	// Stats (every /metrics scrape) never holds both and cannot deadlock
	// with a writer on its way to the sink's lock (making a slot's client
	// reads the topic cache).
	s.mu.Lock()
	st.RecordsWritten, st.BytesWritten = s.closed.records, s.closed.bytes
	writers := make([]*writer, 0, len(s.writers))
	for _, w := range s.writers {
		st.RecordsWritten += w.records.Load()
		st.BytesWritten += w.bytes.Load()
		writers = append(writers, w)
	}
	for _, t := range s.open {
		note(t)
	}
	s.mu.Unlock()
	for _, w := range writers {
		note(w.current())
	}
	if !oldest.IsZero() {
		st.OldestOpenTransaction = time.Since(oldest)
	}
	return st
}

// Close closes the admin client; writers close their own.
func (s *Sink) Close() error {
	s.admin.Close()
	return nil
}

// errUnreachable classes the errors Recover retries.
var errUnreachable = errors.New("kafka unreachable")
