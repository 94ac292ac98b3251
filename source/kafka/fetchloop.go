package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/connector-dev/connector/source"
)

// A fetcher sends its own Fetch requests through its client rather than
// use franz-go's consumer, which decodes a response into kgo.Records as
// soon as it arrives: the fetch a client reads ahead would be held twice,
// as bytes and as ~150 bytes of struct for each record (at 100 B records,
// 24 MiB of a job's peak RSS; bench/RESULTS.md, "A source that decodes
// lazily"). Here a response stays bytes (rawFetch) until Run decodes it.
//
// The fetcher looks its partitions' leaders up (a metadata request) and
// runs a session per leader: one Fetch in flight to it at a time, every
// answer handed on to Run, the next one asked for as soon as the last is
// taken. The offsets a session asks from are those after what it handed
// on, read from the batches' headers (nextOffset). A partition a session
// cannot go on with (its leader moved, it is not available, the
// connection to its leader is lost) leaves the session and waits, with
// the partitions the lookup found no leader for; the other partitions go
// on. The waiting ones are looked up again with backoff (100 ms doubling
// to 10 s), and once some have a leader, or Run added partitions, the
// fetcher stops its sessions and starts over from the offsets after what
// was handed on. An offset out of range, a topic recreated under its name
// (another topic ID), a batch that cannot be read, a log its leader finds
// corrupt and any other error no retry helps are handed on to Run as the
// fetch's error: the job restarts, and for a lost position the restore
// decides (on_position_lost). A batch larger than the clients read and a
// leader that names another replica to fetch from stop the job
// (source.ErrPermanent): no restart reads them.

// plan is where a fetcher's partitions are read: their leaders, and the
// topics' names by ID.
type plan struct {
	leaders map[int32]*leader
	names   map[kadm.TopicID]string
	ids     map[string]kadm.TopicID
	waiting Offsets // partitions without a leader for now, from their offsets
	why     error   // why the first of them waits
	noIDs   bool    // some topic has no topic ID (a broker on an inter-broker protocol before 2.8)
}

// leader is one broker and the partitions it leads, with their leader
// epochs (sent with each fetch, so that a stale leader refuses it).
type leader struct {
	broker kgo.BrokerMetadata
	epochs map[string]map[int32]int32
}

// retriable reports whether the fetcher may start over after err. A
// source.ErrPermanent (errTooLarge, errReadReplica) never is.
func retriable(err error) bool {
	for _, never := range []error{source.ErrPermanent, errDamaged, errNoClient, errCorrupt, errDiverged} {
		if errors.Is(err, never) {
			return false
		}
	}
	var changed *topicChanged
	if errors.As(err, &changed) {
		return false
	}
	var ke *kerr.Error
	return !errors.As(err, &ke) || ke.Retriable
}

// errCorrupt is a partition the leader answers CORRUPT_MESSAGE for: it
// found its log corrupt at the fetched offset. Kafka calls the error
// retriable (a produce request can be damaged on its way), but a fetch
// finds the same bytes on every retry: the Java consumer throws it to the
// application, and the fetcher hands it on to Run, so that the job
// restarts (another replica may lead the partition by then; the job stops
// after max_failures restarts without a checkpoint) rather than wait for
// it forever.
var errCorrupt = errors.New("the partition's leader found its log corrupt at the fetched offset")

// errReadReplica is a partition the leader sends no records of but names
// another replica to fetch it from (KIP-392: a custom replica.selector.class
// of the cluster; Kafka's rack-aware one names the leader itself, since the
// source gives no rack). The source fetches from leaders only: asked again,
// the leader would answer the same, at round-trip pace, forever. It is
// source.ErrPermanent: no restart changes the cluster's selector.
var errReadReplica = errors.New("the partition's leader sends no records but names another replica to fetch them from (the cluster's replica.selector.class); the source fetches from partition leaders only")

// partitionError is why a response's partition cannot be read from the
// leader, if it cannot.
func partitionError(rp *kmsg.FetchResponseTopicPartition) error {
	err := kerr.ErrorForCode(rp.ErrorCode)
	switch {
	case errors.Is(err, kerr.CorruptMessage):
		return fmt.Errorf("%w: %w", errCorrupt, err)
	case err != nil:
		return err
	case rp.PreferredReadReplica >= 0 && len(rp.RecordBatches) == 0: // Kafka sends none with it
		return fmt.Errorf("%w: %w: replica %d", source.ErrPermanent, errReadReplica, rp.PreferredReadReplica)
	}
	return nil
}

// diverged reads a partition's DivergingEpoch, the leader's answer to the
// LastFetchedEpoch sent with a fetch from offset from (-1: none was sent;
// epoch.go). The leader answers when its log does not hold epoch sent up
// to from: it names the last epoch it has at or before sent and where
// that ends. An end before from is a log truncated below what was read:
// errDiverged. An end at or after from, of an earlier epoch, is a leader
// that does not know epoch sent though its log reaches from (its batches
// of that epoch compacted away before it copied the log, say): as the
// Java consumer, which checks the end offset only, the reader takes the
// leader's epoch (adopt) and asks again, rather than stop at every
// restart on an answer the restore's check (checkEpochs) lets pass.
func diverged(rp *kmsg.FetchResponseTopicPartition, from int64, sent int32) (adopt int32, err error) {
	d := rp.DivergingEpoch
	switch {
	case sent < 0 || d.EndOffset < 0 && d.Epoch < 0 || d.EndOffset >= from && d.Epoch >= sent:
		return -1, nil
	case d.EndOffset >= from:
		return d.Epoch, nil
	}
	return -1, fmt.Errorf("%w: the last batch read was of leader epoch %d; the leader's log diverges from it after leader epoch %d, which ends at offset %d",
		errDiverged, sent, d.Epoch, d.EndOffset)
}

// errTooLarge is a fetch response the client refused as larger than it
// reads (Options.readLimit): a record batch larger than the limit, which
// the broker sends whole, so that no retry or restart reads it. It is
// source.ErrPermanent: the job stops, naming the setting to raise.
var errTooLarge = errors.New("a fetch response is larger than the source reads (twice the larger of source.fetch_max_bytes and source.fetch_max_partition_bytes, from 100 MiB to 1 GiB): a record batch that large? raise source.fetch_max_partition_bytes")

// tooLarge marks franz-go's refusal of a response over its read limit
// (BrokerMaxReadBytes), whose error value franz-go does not export; its
// other refusals of a size (an HTTP or TLS answer: the wrong port or
// protocol) are left as they are.
func tooLarge(err error) error {
	if err != nil && strings.Contains(err.Error(), "response exceeds BrokerMaxReadBytes") {
		return fmt.Errorf("%w: %w: %w", source.ErrPermanent, errTooLarge, err)
	}
	return err
}

// errNoClient: a fetcher closed its client to replace it (fetchByName) and
// could not make the new one; it has none to fetch with, and Run restarts.
var errNoClient = errors.New("no client to fetch with")

// topicChanged is a topic found under another ID than the reader's.
type topicChanged struct {
	topic    string
	was, now kadm.TopicID
}

func (e *topicChanged) Error() string {
	return fmt.Sprintf("topic %s was deleted and created again while it was read (topic ID %s, now %s)", e.topic, e.was, e.now)
}

// run fetches from start until ctx is done, or until an error no retry
// helps, which it hands on to Run.
func (fr *fetcher) run(ctx context.Context, f *fetchers, start Offsets) {
	next := start.Clone()
	backoff := time.Duration(0)
	for attempt := 0; ; {
		fr.takeAdded(next)
		if next.Len() == 0 { // a reader without partitions yet
			select {
			case <-fr.added.ready:
				continue // takeAdded takes them
			case <-ctx.Done():
				return
			}
		}
		p, err := fr.lookUp(ctx, f.ids, next)
		if err == nil && p.noIDs && !fr.byName {
			err = fr.fetchByName(ctx, f)
		}
		if err == nil {
			attempt, backoff = 0, 0
			err = fr.fetchFrom(ctx, f, p, next)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !retriable(err) {
			select {
			case f.out <- fetched{err: err}:
			case <-ctx.Done():
			}
			return
		}
		if err == nil {
			continue // partitions were added, or waiting ones have a leader
		}
		attempt++ // the lookup failed: no partition is fetched meanwhile
		backoff = nextBackoff(backoff)
		f.log.Warn().Err(err).Str("client", fr.name).Int("attempt", attempt).Dur("backoff_ms", backoff).
			Msg("looking the partitions' leaders up failed; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// fetchByName replaces the fetcher's client by one that sends Fetch
// requests of version 12 at most, which name topics rather than give their
// IDs: a broker whose metadata has no topic IDs (a new Kafka on an
// inter-broker protocol before 2.8) would answer UNKNOWN_TOPIC_ID to the
// newer ones, which franz-go's consumer avoids the same way. The old
// client closes before the new one opens, with hooks of its own under the
// same name (a client's metrics serve that client only).
func (fr *fetcher) fetchByName(ctx context.Context, f *fetchers) error {
	// A cluster before Kafka 2.8 has no topic IDs and no Fetch v13 either.
	api, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, fr.cl)
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	fr.byName = true
	for _, k := range api.ApiKeys {
		if k.ApiKey == kmsg.Fetch.Int16() && k.MaxVersion < 13 {
			return nil
		}
	}
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Fetch.Int16(), 12)
	var hooks []kgo.Hook
	if f.cfg.Hooks != nil {
		hooks = f.cfg.Hooks(fr.name)
	}
	fr.cl.Close()
	cl, err := kgo.NewClient(append(f.cfg.clientOptsWith(hooks), kgo.MaxVersions(versions))...)
	if err != nil {
		return fmt.Errorf("reader %d: a client that fetches by topic name: %w: %w", f.reader, errNoClient, err)
	}
	fr.cl = cl
	fr.useHooks(hooks)
	f.log.Warn().Str("client", fr.name).Msg("the cluster's metadata has no topic IDs: fetching by topic name (Fetch v12)")
	return nil
}

// nextBackoff is the wait after last: 100 ms, doubling to 10 s.
func nextBackoff(last time.Duration) time.Duration {
	return min(max(2*last, 100*time.Millisecond), 10*time.Second)
}

// lookUp asks the cluster which brokers lead the partitions of next, and
// checks that each topic still has the ID the reader knows it by (ids; a
// topic missing from ids is taken as it is found).
func (fr *fetcher) lookUp(ctx context.Context, ids map[string]kadm.TopicID, next Offsets) (plan, error) {
	req := kmsg.NewPtrMetadataRequest()
	for t := range next {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, fr.cl)
	if err != nil {
		return plan{}, fmt.Errorf("metadata: %w", err)
	}
	brokers := make(map[int32]kgo.BrokerMetadata, len(resp.Brokers))
	for _, b := range resp.Brokers {
		brokers[b.NodeID] = kgo.BrokerMetadata{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack}
	}
	p := plan{leaders: map[int32]*leader{}, names: map[kadm.TopicID]string{}, ids: map[string]kadm.TopicID{}}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		t := *rt.Topic
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			err = fmt.Errorf("metadata of topic %s: %w", t, err)
			if !retriable(err) {
				return plan{}, err
			}
			for part := range next[t] {
				p.wait(t, part, next, err)
			}
			continue
		}
		id := kadm.TopicID(rt.TopicID)
		if was, ok := ids[t]; ok && was != (kadm.TopicID{}) && id != (kadm.TopicID{}) && was != id {
			return plan{}, &topicChanged{topic: t, was: was, now: id}
		}
		p.names[id], p.ids[t] = t, id
		p.noIDs = p.noIDs || id == (kadm.TopicID{})
		found := map[int32]kmsg.MetadataResponseTopicPartition{}
		for _, rp := range rt.Partitions {
			found[rp.Partition] = rp
		}
		for part := range next[t] {
			rp, ok := found[part]
			b, known := brokers[rp.Leader]
			var why error
			switch {
			case !ok:
				why = kerr.UnknownTopicOrPartition
			case rp.ErrorCode != 0 && rp.ErrorCode != kerr.ReplicaNotAvailable.Code:
				why = kerr.ErrorForCode(rp.ErrorCode)
			case rp.Leader < 0 || !known:
				why = kerr.LeaderNotAvailable
			}
			if why != nil {
				why = fmt.Errorf("metadata of %s/%d: %w", t, part, why)
				if !retriable(why) {
					return plan{}, why
				}
				p.wait(t, part, next, why)
				continue
			}
			l := p.leaders[rp.Leader]
			if l == nil {
				l = &leader{broker: b, epochs: map[string]map[int32]int32{}}
				p.leaders[rp.Leader] = l
			}
			if l.epochs[t] == nil {
				l.epochs[t] = map[int32]int32{}
			}
			l.epochs[t][part] = rp.LeaderEpoch
		}
	}
	for t, ps := range next {
		if _, ok := p.ids[t]; !ok {
			for part := range ps {
				p.wait(t, part, next, fmt.Errorf("metadata of topic %s: %w", t, kerr.UnknownTopicOrPartition))
			}
		}
	}
	return p, nil
}

// wait puts a partition the lookup found no leader for among the waiting.
func (p *plan) wait(topic string, partition int32, next Offsets, why error) {
	if p.waiting == nil {
		p.waiting = Offsets{}
	}
	o, _ := next.Lookup(topic, partition)
	p.waiting.Set(topic, partition, o)
	if p.why == nil {
		p.why = why
	}
}

// fetchFrom runs a session per leader of p and looks the waiting
// partitions up again with backoff, until some of them have a leader,
// partitions are added (nil), an error no retry helps comes (returned) or
// ctx is done; then it stops the sessions and sets next to the offsets
// after what they handed on.
func (fr *fetcher) fetchFrom(ctx context.Context, f *fetchers, p plan, next Offsets) error {
	sctx, cancel := context.WithCancel(ctx)
	lost := make(chan lostPartitions)
	var wg sync.WaitGroup
	sessions := make([]*session, 0, len(p.leaders))
	for _, l := range p.leaders {
		s := &session{fr: fr, f: f, l: l, names: p.names, ids: p.ids, next: Offsets{}, lost: lost}
		for t, ps := range l.epochs {
			for part := range ps {
				o, _ := next.Lookup(t, part)
				s.next.Set(t, part, o)
			}
		}
		sessions = append(sessions, s)
		wg.Go(func() { s.run(sctx) })
	}
	waiting := p.waiting
	if waiting == nil {
		waiting = Offsets{}
	}
	var (
		relook  <-chan time.Time
		err     error
		lostAny bool // a partition waited in this round
	)
	// The wait before a lookup grows over rounds (fr.backoff): a leader
	// the metadata still names but that cannot be fetched from would
	// otherwise bring a round every 100 ms. A round without a partition
	// waiting resets it, and so does a round that ran for longer than the
	// last wait before its first partition waited.
	began := time.Now()
	wait := func(why error) {
		if !lostAny && time.Since(began) > fr.backoff {
			fr.backoff = 0 // the round ran well for longer than the last wait
		}
		lostAny = true
		if relook == nil {
			fr.backoff = nextBackoff(fr.backoff)
			relook = time.After(fr.backoff)
		}
		f.log.Warn().Err(why).Str("client", fr.name).Int("waiting", waiting.Len()).Dur("backoff_ms", fr.backoff).
			Msg("partitions wait for a leader; the others are fetched meanwhile")
	}
	if waiting.Len() > 0 {
		wait(p.why)
	}
loop:
	for {
		select {
		case l := <-lost:
			if !retriable(l.why) {
				err = l.why
				break loop
			}
			waiting.Merge(l.next)
			wait(l.why)
		case <-relook:
			relook = nil
			q, lerr := fr.lookUp(ctx, f.ids, waiting)
			if lerr == nil && len(q.leaders) > 0 {
				break loop // some have a leader: start over with them
			}
			if lerr != nil && !retriable(lerr) {
				err = lerr
				break loop
			}
			if lerr == nil {
				lerr = q.why
			}
			wait(lerr)
		case <-fr.added.ready:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	// Sessions stopping may still give partitions up; they are waiting too.
	go func() {
		wg.Wait()
		close(lost)
	}()
	for l := range lost {
		waiting.Merge(l.next)
		if err == nil && !retriable(l.why) {
			err = l.why
		}
	}
	for _, s := range sessions {
		next.Merge(s.next)
	}
	next.Merge(waiting)
	if !lostAny {
		fr.backoff = 0
	}
	return err
}

// testHookHandingOn, when set by a test, runs in a session just before it
// waits for Run to take a response; testHookGivingUp just before it hands
// partitions it gave up to its fetcher (with the session's context).
var (
	testHookHandingOn atomic.Pointer[func()]
	testHookGivingUp  atomic.Pointer[func(context.Context)]
)

// lostPartitions are partitions a session gave up, from the offsets after
// what it handed on, and why.
type lostPartitions struct {
	next Offsets
	why  error
}

// session is a fetcher's fetching from one leader.
type session struct {
	fr    *fetcher
	f     *fetchers
	l     *leader
	names map[kadm.TopicID]string
	ids   map[string]kadm.TopicID
	next  Offsets // its partitions, from after what was handed on
	lost  chan<- lostPartitions
	order []partitionID
	turn  int // the partition of order first in the next request
}

// run fetches until ctx is done or it has no partition left: a failed
// request or an error of the whole response gives all of them up, an error
// of a partition that one (the rest of the response is handed on).
func (s *session) run(ctx context.Context) {
	br := s.fr.cl.Broker(int(s.l.broker.NodeID))
	for s.next.Len() > 0 {
		r, err := br.Request(ctx, s.request())
		err = tooLarge(err)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = kerr.ErrorForCode(r.(*kmsg.FetchResponse).ErrorCode)
		}
		if err != nil {
			s.giveUp(ctx, s.next, fmt.Errorf("fetch from broker %d: %w", s.l.broker.NodeID, err))
			return
		}
		resp := r.(*kmsg.FetchResponse)
		ends, epochs, cut, failed, why := s.read(resp)
		if failed.Len() > 0 {
			s.giveUp(ctx, failed, why)
		}
		if ends.Len() == 0 {
			if cut {
				// Bytes but no whole batch: wait as a broker without
				// records would, rather than ask again at once.
				select {
				case <-time.After(fetchMaxWait):
				case <-ctx.Done():
					return
				}
			}
			continue
		}
		rf := &rawFetch{resp: resp, from: s.next.Clone(), ends: ends, epochs: epochs, broker: s.l.broker, hooks: s.fr.hooks}
		records, bytes := rf.size()
		s.fr.buffer(records, bytes)
		if h := testHookHandingOn.Load(); h != nil {
			(*h)()
		}
		select {
		case s.f.out <- fetched{raw: rf}:
			s.fr.buffer(-records, -bytes)
			s.next.Merge(ends)
			if s.f.epochs != nil {
				s.f.epochs.update(epochs)
			}
		case <-ctx.Done():
			s.fr.buffer(-records, -bytes)
			return
		}
	}
}

// giveUp takes partitions out of the session and hands them to its
// fetcher, from the offsets after what was handed on.
func (s *session) giveUp(ctx context.Context, parts Offsets, why error) {
	gone := Offsets{}
	for t, ps := range parts {
		for part := range ps {
			o, _ := s.next.Lookup(t, part)
			gone.Set(t, part, o)
			delete(s.next[t], part)
		}
	}
	s.order = nil
	if h := testHookGivingUp.Load(); h != nil {
		(*h)(ctx)
	}
	// The fetcher takes from lost until every session has ended, whether
	// it stops them or not.
	s.lost <- lostPartitions{next: gone, why: why}
}

// lastEpoch is the leader epoch of the batch a partition's next offset
// follows, -1 if unknown.
func (s *session) lastEpoch(topic string, partition int32) int32 {
	if s.f == nil || s.f.epochs == nil {
		return -1
	}
	return s.f.epochs.lookup(topic, partition)
}

// request is the next Fetch: every partition of the session from its next
// offset, read_committed, no fetch session (each request names all).
func (s *session) request() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(fetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = s.f.cfg.FetchMaxBytes
	req.IsolationLevel = 1 // read_committed
	req.SessionEpoch = -1  // no fetch session
	share := s.f.share.Load()
	if s.order == nil {
		s.order = sortedPartitions(s.next)
	}
	// The partitions take turns at the front of the request: the broker
	// stretches a partition's share to its first whole batch only for the
	// first partition with data.
	s.turn = (s.turn + 1) % len(s.order)
	for i := range s.order {
		id := s.order[(s.turn+i)%len(s.order)]
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != id.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = id.topic, [16]byte(s.ids[id.topic])
			req.Topics = append(req.Topics, rt)
		}
		rt := &req.Topics[len(req.Topics)-1]
		o, _ := s.next.Lookup(id.topic, id.partition)
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = id.partition
		rp.CurrentLeaderEpoch = s.l.epochs[id.topic][id.partition]
		rp.LastFetchedEpoch = s.lastEpoch(id.topic, id.partition) // Fetch v12+: the leader checks its log holds it up to o
		rp.FetchOffset = o
		rp.PartitionMaxBytes = share
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// read checks a response's partitions: the offsets after what it holds
// of each partition it moves on, whether some partition held bytes but no
// whole batch, and the partitions whose error means the session cannot go
// on with them (the first error says why). Only the partitions that move
// on are decoded (rawFetch.ends). A partition the response holds twice
// (a broker's fault; franz-go's consumer drops the repeat too) is read
// once: its repeat is renamed partition -1, which nothing asked for, so
// that its records are not decoded and emitted a second time.
func (s *session) read(resp *kmsg.FetchResponse) (ends, epochs Offsets, cut bool, failed Offsets, why error) {
	ends, epochs, failed = Offsets{}, Offsets{}, Offsets{}
	seen := make(map[partitionID]bool, s.next.Len())
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		if rt.Topic == "" { // Fetch v13+ answers with topic IDs only
			rt.Topic = s.names[rt.TopicID]
		}
		t := rt.Topic
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			from, ok := s.next.Lookup(t, rp.Partition)
			if !ok {
				continue
			}
			id := partitionID{t, rp.Partition}
			if seen[id] {
				rp.Partition = -1
				continue
			}
			seen[id] = true
			err := partitionError(rp)
			if err == nil {
				var adopt int32
				if adopt, err = diverged(rp, from, s.lastEpoch(t, rp.Partition)); err == nil && adopt >= 0 {
					s.f.epochs.update(Offsets{t: {rp.Partition: int64(adopt)}}) // asked again with it
					continue
				}
			}
			if err != nil {
				failed.Set(t, rp.Partition, from)
				if why == nil || retriable(why) && !retriable(err) {
					why = fmt.Errorf("fetch %s/%d from offset %d: %w", t, rp.Partition, from, err)
				}
				continue
			}
			// A partition's first batch may come cut short by its share
			// of the fetch (the broker stretches the share to a whole
			// batch only for the first partition of the response that
			// has data): nothing of it is read, and it is asked again.
			end, epoch, err := nextOffset(t, rp, from)
			switch {
			case err != nil:
				failed.Set(t, rp.Partition, from)
				why = fmt.Errorf("fetch %s/%d: %w", t, rp.Partition, err) // permanent: it goes first
			case end > from:
				ends.Set(t, rp.Partition, end)
				epochs.Set(t, rp.Partition, int64(epoch))
			case len(rp.RecordBatches) > 0:
				cut = true
			}
		}
	}
	return ends, epochs, cut, failed, why
}
