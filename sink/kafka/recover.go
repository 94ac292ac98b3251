package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/sink"
)

// Recover prepares the sink for a (re)start from the checkpoint whose
// committables are restored, retrying while the cluster is unreachable:
//
//  1. checks the topic and the transaction timeout against the broker's
//     transaction.max.timeout.ms;
//  2. aborts every open transaction of the job (a transactional id's
//     initialisation aborts what it left open): nothing of a checkpoint
//     that did not complete stays pending, and no transaction lingers;
//  3. reads every writer's progress marker (stable: none is pending now;
//     if they stay unstable for unstableGrace with none of the job's
//     transactions open, a broker lost an end marker: the last committed
//     ones, which step 4 checks against the log);
//  4. commits the restored segments whose markers show them uncommitted
//     by producing their records again from the log, where the aborted
//     transaction left them, in a new transaction with their marker;
//  5. ends, with commit markers, the transactions of the restored segments
//     the markers show committed that still hang in a partition they wrote
//     (endCommittedHanging, hanging.go).
func (s *Sink) Recover(ctx context.Context, restored []sink.Committable) error {
	return s.retry(ctx, "at start", func() error { return s.recover(ctx, restored) })
}

// retry runs fn until it returns nil or an error other than errUnreachable,
// backing off and logging while the cluster is unreachable, until ctx ends.
// Until the sink first reached its cluster, a failure the cluster states
// as a misconfiguration (credentials refused, a certificate not trusted,
// a listener of another protocol) is not retried: ErrInvalidConfig,
// naming the key (the job exits 2). Later (an expired token) it is.
func (s *Sink) retry(ctx context.Context, what string, fn func() error) error {
	return sink.Retry{Log: s.log, Name: "kafka sink", System: "cluster", Unreachable: errUnreachable}.Do(ctx, what, func() error {
		err := fn()
		if err == nil {
			s.reached.Store(true)
			return nil
		}
		key, hint, misconfigured := kafkaclient.Explain(err, s.conn)
		switch {
		case !misconfigured:
			return err
		case !s.reached.Load():
			return cfgkey.Wrap(s.keyed(key), fmt.Errorf("%w: %w: %s: %v", sink.ErrInvalidConfig, kafkaclient.ErrMisconfigured, s.keyed(hint), err)) // not unreachable: not retried
		case errors.Is(err, errUnreachable):
			return err
		}
		return fmt.Errorf("%w: %s: %w", errUnreachable, s.keyed(hint), err) // waited for: a token renewed, a password rotated back
	})
}

// keyed is hint (or a key) with its keys in the section of the sink's
// cluster: sink. when the sink writes to a cluster of its own
// (sink.brokers). Only the keys change (kafka.sasl..., kafka.tls...), not
// a host or path that holds "kafka.".
func (s *Sink) keyed(hint string) string {
	if len(s.cfg.Brokers) == 0 {
		return hint
	}
	return kafkaKeys.ReplaceAllString(hint, "sink.$1")
}

var kafkaKeys = regexp.MustCompile(`\bkafka\.(sasl|tls)\b`)

func (s *Sink) recover(ctx context.Context, restored []sink.Committable) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.prepare(ctx); err != nil {
		return err
	}
	// Aborted first: a marker pending in an open transaction would make
	// the stable read wait for the broker's transaction timeout.
	ended, err := s.abortOpen(ctx)
	if err != nil {
		return err
	}
	progress, err := s.readProgress(ctx, true)
	switch {
	case err == nil:
		s.unstableSince = time.Time{}
	case errors.Is(err, kerr.UnstableOffsetCommit) && ended > 0:
		s.unstableSince = time.Time{} // the ends just made are landing
	case errors.Is(err, kerr.UnstableOffsetCommit):
		if s.unstableSince.IsZero() {
			s.unstableSince = time.Now()
		}
		if time.Since(s.unstableSince) < unstableGrace {
			return unreachable(err)
		}
		// A transaction of the job left a marker pending, and none is open
		// to end it: the broker lost the transaction's end marker for the
		// progress group (seen after a broker restart rolled a timed-out
		// transaction back). The last committed markers are read instead.
		// They may lag a checkpoint whose transaction did commit: reproduce
		// reads each segment back from the log, with its end markers, and
		// produces again only what the log shows not committed.
		s.log.Warn().Err(err).Dur("for_ms", time.Since(s.unstableSince)).
			Msg("kafka sink: the progress markers stay unstable with none of the job's transactions open; reading the last committed ones, and checking each restored segment against the log")
		progress, err = s.readProgress(ctx, false)
	}
	if err != nil {
		return unreachable(err)
	}
	// unstableSince stays set until Recover succeeds: a round that ends a
	// hanging transaction and fails on another does not wait the grace
	// again.
	s.mu.Lock()
	s.progress = progress
	s.mu.Unlock()
	restored = slices.Clone(restored)
	slices.SortFunc(restored, func(a, b sink.Committable) int {
		if a.Writer != b.Writer {
			return a.Writer - b.Writer
		}
		return int(int64(a.Checkpoint) - int64(b.Checkpoint))
	})
	before := s.stats.commits.Load()
	var committed []sink.Committable
	for _, c := range restored {
		if progress[c.Writer] >= c.Checkpoint {
			committed = append(committed, c)
			continue
		}
		if err := s.reproduce(ctx, c); err != nil {
			return err
		}
	}
	if err := s.endCommittedHanging(ctx, committed); err != nil {
		return err
	}
	s.unstableSince = time.Time{}
	s.log.Info().Int("restored_segments", len(restored)).Uint64("produced_again", s.stats.commits.Load()-before).Msg("kafka sink recovered")
	return nil
}

// prepare looks the topic up (its ID for the markers, its partitions, its
// largest record) and checks the transaction timeout against the broker's
// maximum.
func (s *Sink) prepare(ctx context.Context) error {
	info, err := s.lookupTopic(ctx, s.cfg.Topic)
	if err != nil {
		return err
	}
	if !info.exists {
		return cfgkey.Wrap("sink.topic", fmt.Errorf("%w: kafka sink: topic %s does not exist on %v: create it (the sink does not)", sink.ErrInvalidConfig, s.cfg.Topic, s.conn.Brokers))
	}
	s.topicID = info.id
	max, err := s.brokerConfig(ctx, "transaction.max.timeout.ms")
	switch {
	case err != nil:
		// Not allowed to describe it, say: the first transaction finds out
		// (timeoutTooLong).
		s.log.Debug().Err(err).Msg("kafka sink: cannot read the brokers' transaction.max.timeout.ms")
	case max > 0 && s.cfg.TransactionTimeout > time.Duration(max)*time.Millisecond && s.cfg.FitTimeout:
		limit := time.Duration(max) * time.Millisecond
		s.timeout.Store(int64(limit))
		s.log.Info().Dur("transaction_timeout_ms", limit).Msg("kafka sink: transactions time out at the brokers' transaction.max.timeout.ms")
	case max > 0 && s.cfg.TransactionTimeout > time.Duration(max)*time.Millisecond:
		return s.timeoutTooLong(time.Duration(max) * time.Millisecond)
	}
	return nil
}

// timeoutTooLong is the error for a sink.transaction_timeout above the
// brokers' maximum (max, 0 if unknown): a config fault.
func (s *Sink) timeoutTooLong(max time.Duration) error {
	limit := "transaction.max.timeout.ms"
	if max > 0 {
		limit = fmt.Sprintf("%s (%v)", limit, max)
	}
	return cfgkey.Wrap("sink.transaction_timeout", fmt.Errorf("%w: sink.transaction_timeout %v is longer than the brokers' %s: lower it, or raise the brokers' maximum",
		sink.ErrInvalidConfig, s.cfg.TransactionTimeout, limit))
}

// topicInfo is what the sink knows of an output topic.
type topicInfo struct {
	exists     bool
	id         kadm.TopicID
	partitions int32
	maxBytes   int // max.message.bytes; 0: unknown
}

// lookupTopic asks the cluster about topic and caches the answer (a topic
// found missing is asked again after a minute).
func (s *Sink) lookupTopic(ctx context.Context, topic string) (topicInfo, error) {
	details, err := s.adm.ListTopics(ctx, topic)
	if err != nil {
		return topicInfo{}, unreachable(fmt.Errorf("metadata of %s: %w", topic, err))
	}
	d := details[topic]
	switch {
	case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return topicInfo{}, nil
	case d.Err != nil:
		key := "sink.topic"
		if topic != s.cfg.Topic {
			key = "sink.topic_field" // a record's topic
		}
		return topicInfo{}, cfgkey.Wrap(key, fmt.Errorf("%w: kafka sink: topic %s: %w", sink.ErrInvalidConfig, topic, d.Err))
	}
	info := topicInfo{exists: true, id: d.ID, partitions: int32(len(d.Partitions))}
	if rc, err := s.adm.DescribeTopicConfigs(ctx, topic); err == nil {
		if c, err := rc.On(topic, nil); err == nil {
			for _, kv := range c.Configs {
				if kv.Key == "max.message.bytes" && kv.Value != nil {
					info.maxBytes, _ = strconv.Atoi(*kv.Value)
				}
			}
		}
	}
	s.mu.Lock()
	s.topics[topic] = cachedTopic{info: info, at: time.Now()}
	s.mu.Unlock()
	return info, nil
}

// topic returns what the sink knows of topic, asking the cluster the first
// time (a record's topic_field may name any topic).
func (s *Sink) topic(ctx context.Context, topic string) (topicInfo, error) {
	s.mu.Lock()
	c, ok := s.topics[topic]
	s.mu.Unlock()
	if ok && (c.info.exists || time.Since(c.at) < time.Minute) {
		return c.info, nil
	}
	return s.lookupTopic(ctx, topic)
}

type cachedTopic struct {
	info topicInfo
	at   time.Time
}

// brokerConfig reads a numeric config of a broker of the cluster. A
// broker's static configs (server.properties) are described only when the
// broker is named: described without one, Kafka answers the cluster-wide
// dynamic configs alone.
func (s *Sink) brokerConfig(ctx context.Context, key string) (int64, error) {
	md, err := s.adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, err
	}
	if len(md.Brokers) == 0 {
		return 0, fmt.Errorf("broker config %s: no broker in the metadata", key)
	}
	rc, err := s.adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
	if err != nil {
		return 0, err
	}
	for _, r := range rc {
		for _, kv := range r.Configs {
			if kv.Key == key && kv.Value != nil {
				return strconv.ParseInt(*kv.Value, 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("broker config %s not found", key)
}

// abortOpen ends every open transaction of the job the brokers list, and
// says how many: it aborts them, and waits for one already committing
// (PrepareCommit). It initialises the job's other transactional ids too:
// every producer a process of the job made before is fenced, its idle
// slots' as well (doc.go, Fencing).
func (s *Sink) abortOpen(ctx context.Context) (ended int, err error) {
	ids, err := s.listJobTxns(ctx)
	if err != nil || len(ids) == 0 {
		return 0, unreachable(err)
	}
	described, err := s.adm.DescribeTransactions(ctx, ids...) // with no ids, it would describe every transaction
	if err != nil {
		return 0, unreachable(fmt.Errorf("describe transactions: %w", err))
	}
	// Each id is initialised by a client of its own: a job's ids number
	// parallelism x slots, so several at a time, within Recover's bound.
	var (
		mu    sync.Mutex
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, initAtOnce)
	)
	for _, d := range described.Sorted() {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			var err error
			open := d.State == "Ongoing" || d.State == "PrepareAbort" || d.State == "PrepareEpochFence"
			if open {
				err = s.abortID(ctx, d.TxnID)
			} else if err = s.initID(ctx, d.TxnID); err != nil {
				err = fmt.Errorf("fence the earlier producers of %s: %w", d.TxnID, err)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case open:
				ended++
			case d.State == "PrepareCommit":
				ended++
				s.log.Info().Str("txn", d.TxnID).Msg("kafka sink: a transaction left committing has committed")
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return ended, unreachable(err)
	}
	return ended, nil
}

// initAtOnce is how many transactional ids abortOpen initialises at once.
const initAtOnce = 8

// unstableGrace is how long Recover waits for the progress markers to turn
// stable while none of the job's transactions is open, before it reads
// the last committed ones (see recover). A transaction the broker is
// ending right now is listed as open; once ended, its markers land within
// seconds.
const unstableGrace = 15 * time.Second

// reproduce commits segment c: it reads the segment back from the log with
// the transaction's end markers, and if the transaction was aborted (a
// crash before its EndTxn, the broker's timeout), produces its records
// again in a new transaction with the marker of c's checkpoint. If the log
// shows the transaction committed (its progress marker was lost: a
// progress group expired after offsets.retention.minutes, or was deleted),
// nothing is produced twice. It uses the writer's recovery id, never one
// of its slots: initialising a slot's id would fence a running writer.
func (s *Sink) reproduce(ctx context.Context, c sink.Committable) error {
	seg, err := decodeSegment(c)
	if err != nil {
		return err
	}
	back, err := s.readSegment(ctx, seg)
	var hang *errHanging
	if errors.As(err, &hang) && !(back.committed > 0 && back.aborted > 0) {
		if err := s.endHanging(ctx, c, seg, back.committed > 0, true, hang); err != nil {
			return err
		}
		back, err = s.readSegment(ctx, seg) // now with its end markers everywhere
		hang = nil
		if errors.As(err, &hang) {
			return unreachable(err) // looked at again in the next round
		}
	}
	if err != nil && hang == nil {
		return err
	}
	switch {
	case back.committed > 0 && back.aborted > 0:
		return fmt.Errorf("%w: kafka sink: transaction %s of checkpoint %d writer %d is committed in %d partitions and aborted in %d",
			sink.ErrCommitLost, seg.TxnID, c.Checkpoint, c.Writer, back.committed, back.aborted)
	case back.committed > 0:
		s.setProgress(c.Writer, c.Checkpoint)
		s.log.Warn().Uint64("checkpoint", uint64(c.Checkpoint)).Int("writer", c.Writer).Str("txn", seg.TxnID).Str("group", progressGroup(s.job, c.Writer)).
			Msg("kafka sink: the log shows a checkpoint's transaction committed but its progress marker is gone (the group expired or was deleted); not producing it again")
		return nil
	}
	recs := back.records
	if int64(len(recs)) != seg.Records {
		return fmt.Errorf("%w: kafka sink: the log holds %d of the %d records of checkpoint %d writer %d (transaction %s): deleted by retention before they could be committed again",
			sink.ErrCommitLost, len(recs), seg.Records, c.Checkpoint, c.Writer, seg.TxnID)
	}
	id := s.recoveryID(c.Writer)
	cl, err := s.client(id, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return unreachable(err)
	}
	t := &txn{id: id, cl: cl, writer: c.Writer, began: time.Now(), ranges: map[topicPartition]*prange{}}
	for _, r := range recs {
		cl.Produce(ctx, r, t.acked)
	}
	if err := cl.Flush(ctx); err != nil {
		return unreachable(err)
	}
	if _, err := t.segment(); err != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return unreachable(err)
	}
	if err := s.addMarker(ctx, t, c.Checkpoint); err != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return unreachable(err)
	}
	crashpoint.Hit(crashpoint.BeforeEndTxn)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return unreachable(err)
	}
	s.stats.commits.Add(1)
	s.setProgress(c.Writer, c.Checkpoint)
	s.log.Warn().Uint64("checkpoint", uint64(c.Checkpoint)).Int("writer", c.Writer).Int("records", len(recs)).Str("was", seg.TxnID).
		Msg("kafka sink: produced a checkpoint's transaction again from the log (it was aborted before it could be committed)")
	return nil
}

// segmentLog is what the log holds of a segment: its records (those of
// its producer and epoch within its ranges) and how its transaction ended
// in each partition.
type segmentLog struct {
	records            []*kgo.Record
	committed, aborted int // partitions whose end marker says so
}

// readSegment reads a segment back from the log, uncommitted records
// included, up to its transaction's end marker in each partition (the
// first control record of its producer after its first record). The
// transaction must have ended (Recover aborts the job's open ones first).
func (s *Sink) readSegment(ctx context.Context, seg segment) (segmentLog, error) {
	var back segmentLog
	if len(seg.Ranges) == 0 {
		return back, nil
	}
	starts := map[string]map[int32]kgo.Offset{}
	ranges := map[topicPartition]prange{}
	for _, r := range seg.Ranges {
		if starts[r.Topic] == nil {
			starts[r.Topic] = map[int32]kgo.Offset{}
		}
		starts[r.Topic][r.Partition] = kgo.NewOffset().At(r.First)
		ranges[topicPartition{r.Topic, r.Partition}] = r
	}
	cl, err := kgo.NewClient(append(kafkaclient.Opts(s.conn, s.log), kgo.ConsumePartitions(starts), kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NoResetOffset()))...)
	if err != nil {
		return back, err
	}
	defer cl.Close()
	// Each poll is bounded, so that a marker that does not come is said
	// (in the error, which Recover's retry logs) and looked for again with
	// a new client, not waited for in silence until Recover's own
	// deadline. A long segment reads on as long as records come.
	wait := cmp.Or(s.markerWait, segmentReadWait)
	reached := map[topicPartition]int64{}
	// Progress is a record of an open partition below the log's end as it
	// was at the start (every marker there is, abortOpen having ended the
	// job's transactions, lies below it), or of the segment's producer:
	// other producers' records between the segment and its marker are read
	// through however long they take, and new ones in a busy topic do not
	// keep the read waiting.
	ends := map[topicPartition]int64{}
	if listed, err := s.adm.ListEndOffsets(ctx, seg.topics()...); err == nil {
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				ends[topicPartition{o.Topic, o.Partition}] = o.Offset
			}
		})
	}
	last := time.Now() // when the last progress came
	for len(ranges) > 0 {
		if time.Since(last) >= wait {
			hang, seen := s.lookOpen(ctx, seg, ranges, reached)
			if len(hang) == len(ranges) {
				return back, &errHanging{txn: seg.TxnID, partitions: hang, detail: seen}
			}
			return back, unreachable(fmt.Errorf("read back transaction %s (%d partitions without its end marker yet): nothing more of it came for %v: %s",
				seg.TxnID, len(ranges), wait, seen))
		}
		pctx, cancel := context.WithTimeout(ctx, wait-time.Since(last))
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return back, unreachable(fmt.Errorf("read back transaction %s (%d partitions without its end marker yet): %w", seg.TxnID, len(ranges), err))
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("read back transaction %s from %s/%d: %w", seg.TxnID, t, p, err)
			}
		})
		if ferr != nil {
			return back, readBackFailed(ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			tp := topicPartition{r.Topic, r.Partition}
			reached[tp] = r.Offset
			pr, open := ranges[tp]
			if !open {
				return
			}
			if end, ok := ends[tp]; r.ProducerID == seg.ProducerID || ok && r.Offset < end {
				last = time.Now()
			}
			if r.ProducerID != seg.ProducerID {
				return
			}
			if r.Attrs.IsControl() {
				if controlType(r.Key) == controlCommit {
					back.committed++
				} else {
					back.aborted++
				}
				delete(ranges, tp)
				return
			}
			if r.ProducerEpoch == seg.Epoch && r.Offset <= pr.Last {
				back.records = append(back.records, &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
			}
		})
	}
	return back, nil
}

// segmentReadWait is how long readSegment waits for more of a segment
// before it looks at why nothing comes. When it is read, none of the
// job's transactions is open at the coordinator (abortOpen), so every
// marker should be in the log already: one missing after this long may
// hang (hanging.go).
const segmentReadWait = 10 * time.Second

// A control record's key is a version (int16) and a type (int16): 0 ends
// a transaction by aborting it, 1 by committing it.
const controlCommit = 1

func controlType(key []byte) int16 {
	if len(key) < 4 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(key[2:4]))
}

// unreachable classes err as one Recover retries, unless it is a broker
// error no retry fixes.
func unreachable(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return err
	}
	if errors.Is(err, sink.ErrInvalidConfig) || errors.Is(err, sink.ErrCommitLost) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnreachable, err)
}

// readBackFailed classes an error no retry helps of reading a segment back:
// a refused authorization is the cluster's config (the job's principal may
// not read the output topic), not output lost; anything else (the segment
// deleted by retention, OFFSET_OUT_OF_RANGE) is ErrCommitLost.
func readBackFailed(err error) error {
	for _, auth := range []error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, auth) {
			return cfgkey.Wrap("sink.topic", fmt.Errorf("%w: %w (the job's principal must be allowed to read the output topic: a restart reads its open transactions back)", sink.ErrInvalidConfig, err))
		}
	}
	return fmt.Errorf("%w: %w", sink.ErrCommitLost, err)
}
