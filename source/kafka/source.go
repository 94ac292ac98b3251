package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/source"
)

// ErrUnreachable classes errors reaching the brokers; Open keeps retrying them.
var ErrUnreachable = errors.New("kafka unreachable")

// Source is the job's Kafka source: its readers, and the offset committer.
//
// Open resolves where every partition starts; Readers returns the parallel
// readers, each run by one goroutine; Commit may be called from any goroutine
// (the runtime calls it after a checkpoint completes); Close closes the admin
// client after the readers have stopped.
type Source struct {
	cfg     Options
	log     zerolog.Logger
	admin   *kgo.Client
	adm     *kadm.Client
	readers []*Reader

	ids     map[string]kadm.TopicID // each topic's ID, as resolved at Open
	lastOK  atomic.Int64            // unix nanos of the last answer from the brokers
	commits committer               // who else commits to the group (instance.go)

	mu    sync.Mutex
	known Offsets // every partition ever handed to a reader, with its start
	// epochs: the leader epoch of the batch each restored start follows,
	// where the checkpoint knows it (epoch.go); set by resolve.
	epochs Offsets
}

// Open connects, resolves the start of every partition of the configured
// topics and builds the readers. restored holds the positions of the
// checkpoint the job restores from, nil when there is none; they are
// checked against the topics as they are now (see checkRestored and
// Options.OnPositionLost); a partition the checkpoint does not know (added
// after it was taken) starts at the group's committed offset if that lies
// within its log, else at its log start, as one found by Discover does, so
// none of its records is skipped (resolve). It retries unreachable brokers
// with exponential backoff, logging each failure, until ctx is done.
func Open(ctx context.Context, cfg Options, restored *position, log zerolog.Logger) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("source config: %w", err)
	}
	admin, err := kgo.NewClient(cfg.clientOpts("source-admin")...)
	if err != nil {
		return nil, fmt.Errorf("source client: %w", err)
	}
	s := &Source{cfg: cfg, log: log, admin: admin, adm: kadm.NewClient(admin), known: Offsets{}}
	s.commits.instance = instanceID()
	var starts Offsets
	err = retry(ctx, log, "resolve start offsets", func(ctx context.Context) error {
		var err error
		starts, err = s.resolve(ctx, restored)
		return cfg.explain(err)
	})
	if err != nil {
		admin.Close()
		return nil, err
	}
	s.known = starts.Clone()
	s.readers = make([]*Reader, cfg.Readers)
	for i := range s.readers {
		s.readers[i] = newReader(i, cfg, s.owned(i, starts), s.owned(i, s.epochs), s.ids, log)
	}
	s.markOK()
	s.refreshLag(ctx)
	log.Info().Int("partitions", starts.Len()).Int("readers", cfg.Readers).Str("group", cfg.Group).Msg("source opened")
	return s, nil
}

// Readers returns the parallel readers; reader i is task "source-i".
func (s *Source) Readers() []source.Reader {
	out := make([]source.Reader, len(s.readers))
	for i, r := range s.readers {
		out[i] = r
	}
	return out
}

var _ source.Partitioned = (*Source)(nil)

// Owned is how many partitions each reader owns now (source.Partitioned).
func (s *Source) Owned() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := make([]int, len(s.readers))
	for i := range s.readers {
		n[i] = s.owned(i, s.known).Len()
	}
	return n
}

// Run, every Options.DiscoverInterval, checks that the topics are the ones
// the job started on (a topic deleted or recreated ends Run with an error)
// and looks for new partitions; every probeEvery it lists the partitions'
// high watermarks, for Lag and Health. It returns nil when ctx is done.
func (s *Source) Run(ctx context.Context) error {
	discover := time.NewTicker(s.cfg.DiscoverInterval)
	defer discover.Stop()
	probe := time.NewTicker(min(probeEvery, s.cfg.DiscoverInterval))
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-probe.C:
			s.refreshLag(ctx)
		case <-discover.C:
			if err := s.checkTopics(ctx); err != nil {
				return err
			}
			if err := s.Discover(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("partition discovery failed")
			}
		}
	}
}

// probeEvery is how often Run asks the brokers for the partitions' ends.
const probeEvery = 5 * time.Second

var _ source.HealthReporter = (*Source)(nil)

// Health reports the brokers unanswering for longer than
// source.HealthWindow.
func (s *Source) Health() error {
	last := time.Unix(0, s.lastOK.Load())
	if since := time.Since(last); since > source.HealthWindow {
		return fmt.Errorf("the Kafka brokers have not answered for %v (since %s)", since.Round(time.Second), last.UTC().Format(time.RFC3339))
	}
	return nil
}

func (s *Source) markOK() { s.lastOK.Store(time.Now().UnixNano()) }

// owner returns the reader index owning a partition.
func (s *Source) owner(topic string, partition int32) int {
	for i, t := range s.cfg.Topics {
		if t == topic {
			return (i + int(partition)) % s.cfg.Readers
		}
	}
	return int(partition) % s.cfg.Readers
}

func (s *Source) owned(i int, all Offsets) Offsets {
	o := Offsets{}
	for t, ps := range all {
		for p, n := range ps {
			if s.owner(t, p) == i {
				o.Set(t, p, n)
			}
		}
	}
	return o
}

// resolve lists every partition of the configured topics and picks its start:
// the restored offset (checked, see checkRestored), else the group's
// committed offset (if it lies within the partition's log), else (restoring
// a checkpoint) the log start, else per StartOffset the log start or the
// last stable offset (the end of what read_committed reads).
func (s *Source) resolve(ctx context.Context, restored *position) (Offsets, error) {
	ids, err := s.topicIDs(ctx)
	if err != nil {
		return nil, err
	}
	s.ids = ids
	starts, err := s.listEdges(ctx, logStart)
	if err != nil {
		return nil, err
	}
	ends, err := s.listEdges(ctx, logEnd)
	if err != nil {
		return nil, err
	}
	if restored != nil {
		if err := s.checkRestored(ctx, restored, ids, starts, ends); err != nil {
			return nil, err
		}
	}
	committed, err := s.adm.FetchOffsets(ctx, s.cfg.Group)
	if errors.Is(err, kerr.GroupIDNotFound) { // kfake's answer for a group with no offsets
		committed, err = nil, nil
	}
	if err != nil {
		return nil, classify("fetch committed offsets of group "+s.cfg.Group, err)
	}
	s.commits.seen(committed)
	if restored == nil && s.cfg.Slot != nil && s.cfg.BaseGroup != s.cfg.Group {
		if committed, err = s.withBaseGroup(ctx, committed); err != nil {
			return nil, err
		}
	}
	out := starts.Clone()
	s.epochs = Offsets{}
	if restored == nil && s.cfg.StartOffset == StartLatest {
		// The last stable offset, as the Java consumer's "latest" under
		// read_committed: from the high watermark, a transaction open at
		// the start would be read from the middle once it commits.
		if out, err = s.listEdges(ctx, stableEnd); err != nil {
			return nil, err
		}
	}
	for t, ps := range starts {
		for p, start := range ps {
			end, _ := ends.Lookup(t, p)
			if n, ok := restored.lookup(t, p); ok {
				out.Set(t, p, n)
				if e, ok := restored.Epochs.Lookup(t, p); ok {
					s.epochs.Set(t, p, e)
				}
				continue
			}
			if c, ok := committed.Lookup(t, p); ok && c.Err == nil && c.At >= start && c.At <= end {
				out.Set(t, p, c.At)
			} else if ok && c.Err == nil && c.At >= 0 {
				s.log.Warn().Str("topic", t).Int32("partition", p).Int64("committed", c.At).Int64("log_start", start).Int64("log_end", end).
					Msg("the group's committed offset lies outside the partition's log; ignoring it")
			}
		}
	}
	return out, nil
}

// edge is which offset of a partition's log listEdges lists.
type edge int

const (
	logStart  edge = iota
	logEnd         // the high watermark: the end of what the broker has replicated
	stableEnd      // the last stable offset: the end of what read_committed reads, before any open transaction
)

// listEdges returns every partition of the configured topics with its
// offset at the edge asked for.
func (s *Source) listEdges(ctx context.Context, which edge) (Offsets, error) {
	list := s.adm.ListStartOffsets
	switch which {
	case logEnd:
		list = s.adm.ListEndOffsets
	case stableEnd:
		list = s.adm.ListCommittedOffsets
	}
	listed, err := list(ctx, s.cfg.Topics...)
	if err != nil {
		return nil, classify(fmt.Sprintf("list offsets of %v", s.cfg.Topics), err)
	}
	o := Offsets{}
	var errs []error
	listed.Each(func(l kadm.ListedOffset) {
		if l.Err != nil {
			errs = append(errs, classify(fmt.Sprintf("%s/%d", l.Topic, l.Partition), l.Err))
			return
		}
		o.Set(l.Topic, l.Partition, l.Offset)
	})
	for _, t := range s.cfg.Topics {
		if _, ok := o[t]; !ok {
			errs = append(errs, fmt.Errorf("topic %s has no partitions (does it exist?)", t))
		}
	}
	if err := errors.Join(errs...); err != nil {
		if !errors.Is(err, source.ErrPermanent) {
			err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return nil, err
	}
	s.markOK()
	if s.cfg.Slot != nil {
		for t, ps := range o {
			for p := range ps {
				if !s.cfg.Slot.Owns(p) {
					delete(ps, p)
				}
			}
			if len(ps) == 0 {
				delete(o, t) // a topic with no partition in this slot
			}
		}
	}
	return o, nil
}

// Discover looks for partitions added to the topics since the last look and
// hands each new one to its reader, starting at the partition's log start so
// nothing written to it is missed. The runtime calls it periodically.
func (s *Source) Discover(ctx context.Context) error {
	all, err := s.listEdges(ctx, logStart)
	if err != nil {
		return err
	}
	s.mu.Lock()
	added := Offsets{}
	for t, ps := range all {
		for p, n := range ps {
			if _, ok := s.known.Lookup(t, p); !ok {
				added.Set(t, p, n)
				s.known.Set(t, p, n)
			}
		}
	}
	s.mu.Unlock()
	for i, r := range s.readers {
		if mine := s.owned(i, added); mine.Len() > 0 {
			s.log.Info().Int("reader", i).Str("partitions", mine.String()).Msg("new partitions discovered")
			if err := r.add(ctx, mine); err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit commits a completed checkpoint's offsets (its readers' positions)
// to the consumer group, so lag tools see progress. The checkpoint, not the
// group, is the source of truth: a failed commit is logged by the caller
// and repaired by the next. Offsets of a topic deleted and created again
// since (whose offsets mean nothing in the new log, and which the restore
// started elsewhere under on_position_lost: earliest) are left out.
//
// A restored checkpoint may hold a topic the job no longer reads: its
// offsets are committed too, when the topic is still the one the
// checkpoint read (its id): the restart's commit is what repairs a crash
// before the checkpoint's own commit, and later checkpoints no longer
// hold the topic, so without it the group kept an older offset, and the
// topic added back to source.topics started there, writing again what
// the checkpoint's output held.
func (s *Source) Commit(ctx context.Context, positions []source.Position) error {
	p, err := mergePositions(positions)
	if err != nil {
		return err
	}
	o := Offsets{}
	var gone []string
	for t, ps := range p.Offsets {
		if !slices.Contains(s.cfg.Topics, t) {
			gone = append(gone, t)
			continue
		}
		if !recreatedSince(p.TopicIDs[t], s.ids[t]) {
			o[t] = ps
		}
	}
	if len(gone) > 0 {
		s.addUnread(ctx, p, gone, o)
	}
	return s.CommitOffsets(ctx, o)
}

// addUnread adds to o the offsets of p's topics the job no longer reads
// (gone) whose topic is still the one p read: same id, known. A topic
// whose id p does not know (a checkpoint of an older version), or that
// cannot be looked up, is left out, as before: at worst records are
// written again later, never skipped.
func (s *Source) addUnread(ctx context.Context, p position, gone []string, o Offsets) {
	details, err := s.adm.ListTopics(ctx, gone...)
	if err != nil {
		s.log.Warn().Err(err).Strs("topics", gone).Msg("cannot look up the topics the job no longer reads: their checkpointed offsets are not committed")
		return
	}
	for _, t := range gone {
		d, ok := details[t]
		if !ok || d.Err != nil || p.TopicIDs[t] == "" || d.ID.String() != p.TopicIDs[t] {
			continue
		}
		o[t] = p.Offsets[t]
	}
}

// Describe lists the offsets of positions, partition by partition.
func (s *Source) Describe(positions []source.Position) string {
	p, err := mergePositions(positions)
	if err != nil {
		return err.Error()
	}
	return p.Offsets.String()
}

// CommitOffsets commits offsets to the consumer group.
// Each commit carries this process's instance in the offsets' metadata,
// and is preceded by a check for another live instance (instance.go).
func (s *Source) CommitOffsets(ctx context.Context, offsets Offsets) error {
	if offsets.Len() == 0 {
		return nil
	}
	if err := s.checkOtherInstance(ctx); err != nil {
		return err
	}
	os := make(kadm.Offsets)
	for t, ps := range offsets {
		for p, n := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: n, LeaderEpoch: -1, Metadata: s.commits.instance})
		}
	}
	if err := s.adm.CommitAllOffsets(ctx, s.cfg.Group, os); err != nil {
		return fmt.Errorf("commit offsets to group %s: %w", s.cfg.Group, err)
	}
	s.commits.mu.Lock()
	if s.commits.mine == nil {
		s.commits.mine = make(map[partitionID]bool, offsets.Len())
	}
	for t, ps := range offsets {
		for p := range ps {
			s.commits.mine[partitionID{t, p}] = true
		}
	}
	s.commits.mu.Unlock()
	return nil
}

// Close releases the admin client. Readers close their own clients when Run returns.
func (s *Source) Close() { s.admin.Close() }

// retry runs fn until it succeeds, a non-ErrUnreachable error comes back, or
// ctx is done, sleeping with exponential backoff (100ms doubling to 10s).
func retry(ctx context.Context, log zerolog.Logger, what string, fn func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := fn(actx)
		cancel()
		if err == nil || !errors.Is(err, ErrUnreachable) {
			return err
		}
		if ctx.Err() != nil { // stopped meanwhile: not a broker problem
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		log.Warn().Err(err).Int("attempt", attempt).Dur("backoff_ms", backoff).Msg(what + " failed; retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// withBaseGroup fills in, for the partitions of a slot that never ran (no
// checkpoint) and has no offset in its own group, the offset committed to
// the job's group: where the job stopped when it ran in single mode.
func (s *Source) withBaseGroup(ctx context.Context, committed kadm.OffsetResponses) (kadm.OffsetResponses, error) {
	base, err := s.adm.FetchOffsets(ctx, s.cfg.BaseGroup)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return committed, nil
	}
	if err != nil {
		return nil, classify("fetch committed offsets of group "+s.cfg.BaseGroup, err)
	}
	if committed == nil {
		committed = kadm.OffsetResponses{}
	}
	n := 0
	base.Each(func(o kadm.OffsetResponse) {
		if _, ok := committed.Lookup(o.Topic, o.Partition); ok || o.Err != nil || o.At < 0 || !s.cfg.Slot.Owns(o.Partition) {
			return
		}
		committed.Add(o)
		n++
	})
	if n > 0 {
		s.log.Info().Str("group", s.cfg.BaseGroup).Int("partitions", n).Msg("the slot starts where the job's own group says it stopped (it ran in single mode)")
	}
	return committed, nil
}
