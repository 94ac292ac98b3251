package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

	mu    sync.Mutex
	known Offsets // every partition ever handed to a reader, with its start
}

// Open connects, resolves the start of every partition of the configured
// topics and builds the readers. restored holds the offsets of the checkpoint
// the job restores from, nil when there is none; a partition the checkpoint
// does not know (added after it was taken) starts at its log start, as one
// found by Discover does, so none of its records is skipped. It retries unreachable brokers with
// exponential backoff, logging each failure, until ctx is done.
func Open(ctx context.Context, cfg Options, restored Offsets, log zerolog.Logger) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("source config: %w", err)
	}
	admin, err := kgo.NewClient(cfg.clientOpts("source-admin")...)
	if err != nil {
		return nil, fmt.Errorf("source client: %w", err)
	}
	s := &Source{cfg: cfg, log: log, admin: admin, adm: kadm.NewClient(admin), known: Offsets{}}
	var starts Offsets
	err = retry(ctx, log, "resolve start offsets", func(ctx context.Context) error {
		var err error
		starts, err = s.resolve(ctx, restored)
		return err
	})
	if err != nil {
		admin.Close()
		return nil, err
	}
	s.known = starts.Clone()
	s.readers = make([]*Reader, cfg.Readers)
	for i := range s.readers {
		s.readers[i] = newReader(i, cfg, s.owned(i, starts), log)
	}
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

// Run looks for new partitions, and lists the partitions' high watermarks
// for Lag, every Options.DiscoverInterval until ctx is done.
func (s *Source) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.DiscoverInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Discover(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("partition discovery failed")
			}
			s.refreshLag(ctx)
		}
	}
}

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
// the restored offset, else the group's committed offset, else (restoring a
// checkpoint) the log start, else the start or end of the partition per
// StartOffset.
func (s *Source) resolve(ctx context.Context, restored Offsets) (Offsets, error) {
	starts, err := s.listEdges(ctx, restored == nil && s.cfg.StartOffset == StartLatest)
	if err != nil {
		return nil, err
	}
	committed, err := s.adm.FetchOffsets(ctx, s.cfg.Group)
	if errors.Is(err, kerr.GroupIDNotFound) { // kfake's answer for a group with no offsets
		committed, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: fetch committed offsets of group %s: %v", ErrUnreachable, s.cfg.Group, err)
	}
	for t, ps := range starts {
		for p := range ps {
			if n, ok := restored.Lookup(t, p); ok {
				starts.Set(t, p, n)
			} else if c, ok := committed.Lookup(t, p); ok && c.Err == nil && c.At >= 0 {
				starts.Set(t, p, c.At)
			}
		}
	}
	return starts, nil
}

// listEdges returns every partition of the configured topics with its log
// start offset, or its end offset when end is true.
func (s *Source) listEdges(ctx context.Context, end bool) (Offsets, error) {
	list := s.adm.ListStartOffsets
	if end {
		list = s.adm.ListEndOffsets
	}
	listed, err := list(ctx, s.cfg.Topics...)
	if err != nil {
		return nil, fmt.Errorf("%w: list offsets of %v: %v", ErrUnreachable, s.cfg.Topics, err)
	}
	o := Offsets{}
	var errs []error
	listed.Each(func(l kadm.ListedOffset) {
		if l.Err != nil {
			errs = append(errs, fmt.Errorf("%s/%d: %w", l.Topic, l.Partition, l.Err))
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
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return o, nil
}

// Discover looks for partitions added to the topics since the last look and
// hands each new one to its reader, starting at the partition's log start so
// nothing written to it is missed. The runtime calls it periodically.
func (s *Source) Discover(ctx context.Context) error {
	all, err := s.listEdges(ctx, false)
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
// and repaired by the next.
func (s *Source) Commit(ctx context.Context, positions []source.Position) error {
	o, err := mergePositions(positions)
	if err != nil {
		return err
	}
	return s.CommitOffsets(ctx, o)
}

// Describe lists the offsets of positions, partition by partition.
func (s *Source) Describe(positions []source.Position) string {
	o, err := mergePositions(positions)
	if err != nil {
		return err.Error()
	}
	return o.String()
}

// CommitOffsets commits offsets to the consumer group.
func (s *Source) CommitOffsets(ctx context.Context, offsets Offsets) error {
	os := make(kadm.Offsets)
	for t, ps := range offsets {
		for p, n := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: n, LeaderEpoch: -1})
		}
	}
	if err := s.adm.CommitAllOffsets(ctx, s.cfg.Group, os); err != nil {
		return fmt.Errorf("commit offsets to group %s: %w", s.cfg.Group, err)
	}
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
		log.Warn().Err(err).Int("attempt", attempt).Dur("backoff", backoff).Msg(what + " failed; retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}
