package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
// answer without a partition error handed on to Run, the next one asked
// for as soon as the last is taken. The offsets a session asks from are
// those after what it handed on, read from the batches' headers
// (nextOffset). Whatever a session cannot go on from (a partition whose
// leader moved or that is not available, a lost connection, partitions
// added by Run) stops every session of the fetcher; it looks the leaders
// up again and starts over from the offsets after what was handed on,
// retrying with backoff while that fails. An offset out of range, a topic
// recreated under its name (another topic ID) and any other error no retry
// helps are handed on to Run as the fetch's error: the job restarts, and
// the restore decides (on_position_lost).

// plan is where a fetcher's partitions are read: their leaders, and the
// topics' names by ID.
type plan struct {
	leaders map[int32]*leader
	names   map[kadm.TopicID]string
	ids     map[string]kadm.TopicID
}

// leader is one broker and the partitions it leads, with their leader
// epochs (sent with each fetch, so that a stale leader refuses it).
type leader struct {
	broker kgo.BrokerMetadata
	epochs map[string]map[int32]int32
}

// errStop is a session stopped by its fetcher, not by a failure.
var errStop = errors.New("stopped")

// retriable reports whether the fetcher may start over after err.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	var changed *topicChanged
	return !errors.As(err, &changed)
}

// topicChanged is a topic found under another ID than the reader's.
type topicChanged struct {
	topic     string
	was, now  kadm.TopicID
	partition int32
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
		progressed := false
		if err == nil {
			progressed, err = fr.fetchFrom(ctx, f, p, next)
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
		if progressed || err == nil {
			attempt, backoff = 0, 0
		}
		if err == nil {
			continue // partitions were added
		}
		attempt++
		backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
		f.log.Warn().Err(err).Str("client", fr.name).Int("attempt", attempt).Dur("backoff_ms", backoff).
			Msg("fetching stopped; looking the partitions' leaders up again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
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
			return plan{}, fmt.Errorf("metadata of topic %s: %w", t, err)
		}
		id := kadm.TopicID(rt.TopicID)
		if was, ok := ids[t]; ok && was != (kadm.TopicID{}) && id != (kadm.TopicID{}) && was != id {
			return plan{}, &topicChanged{topic: t, was: was, now: id}
		}
		p.names[id], p.ids[t] = t, id
		found := map[int32]kmsg.MetadataResponseTopicPartition{}
		for _, rp := range rt.Partitions {
			found[rp.Partition] = rp
		}
		for part := range next[t] {
			rp, ok := found[part]
			switch {
			case !ok:
				return plan{}, fmt.Errorf("metadata of %s/%d: %w", t, part, kerr.UnknownTopicOrPartition)
			case rp.ErrorCode != 0 && rp.ErrorCode != kerr.ReplicaNotAvailable.Code:
				return plan{}, fmt.Errorf("metadata of %s/%d: %w", t, part, kerr.ErrorForCode(rp.ErrorCode))
			case rp.Leader < 0:
				return plan{}, fmt.Errorf("metadata of %s/%d: %w", t, part, kerr.LeaderNotAvailable)
			}
			b, ok := brokers[rp.Leader]
			if !ok {
				return plan{}, fmt.Errorf("metadata of %s/%d: leader %d is not among the brokers: %w", t, part, rp.Leader, kerr.LeaderNotAvailable)
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
		if len(ps) > 0 && !p.has(t) {
			return plan{}, fmt.Errorf("metadata of topic %s: %w", t, kerr.UnknownTopicOrPartition)
		}
	}
	return p, nil
}

func (p plan) has(topic string) bool {
	for _, l := range p.leaders {
		if _, ok := l.epochs[topic]; ok {
			return true
		}
	}
	return false
}

// fetchFrom runs a session per leader of p until one stops, partitions are
// added or ctx is done, then stops them all and sets next to the offsets
// after what they handed on. It returns whether they handed anything on,
// and the error of the session that stopped first (nil when partitions
// were added).
func (fr *fetcher) fetchFrom(ctx context.Context, f *fetchers, p plan, next Offsets) (bool, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopped := make(chan error, len(p.leaders))
	var wg sync.WaitGroup
	sessions := make([]*session, 0, len(p.leaders))
	for _, l := range p.leaders {
		s := &session{fr: fr, f: f, l: l, names: p.names, ids: p.ids, next: Offsets{}}
		for t, ps := range l.epochs {
			for part := range ps {
				o, _ := next.Lookup(t, part)
				s.next.Set(t, part, o)
			}
		}
		sessions = append(sessions, s)
		wg.Go(func() { stopped <- s.run(sctx) })
	}
	var err error
	select {
	case err = <-stopped:
	case <-fr.added.ready:
	case <-ctx.Done():
	}
	cancel(errStop)
	wg.Wait()
	progressed := false
	for _, s := range sessions {
		progressed = progressed || s.handed
		next.Merge(s.next)
	}
	return progressed, err
}

// session is a fetcher's fetching from one leader.
type session struct {
	fr     *fetcher
	f      *fetchers
	l      *leader
	names  map[kadm.TopicID]string
	ids    map[string]kadm.TopicID
	next   Offsets // after what was handed on
	handed bool    // anything was
	order  []partitionID
	turn   int // the partition of order first in the next request
}

// run fetches until ctx is done (nil) or a response cannot be handed on:
// a failed request, an error of the whole response or of a partition.
func (s *session) run(ctx context.Context) error {
	br := s.fr.cl.Broker(int(s.l.broker.NodeID))
	for {
		req := s.request()
		r, err := br.Request(ctx, req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetch from broker %d: %w", s.l.broker.NodeID, err)
		}
		resp := r.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("fetch from broker %d: %w", s.l.broker.NodeID, err)
		}
		ends, records, err := s.read(resp)
		if err != nil {
			return err
		}
		if !records {
			continue // nothing new (the fetch waited FetchMaxWait)
		}
		rf := &rawFetch{resp: resp, from: s.next.Clone(), names: s.names, broker: s.l.broker, hooks: s.fr.hooks}
		select {
		case s.f.out <- fetched{raw: rf}:
			s.next.Merge(ends)
			s.handed = true
		case <-ctx.Done():
			return nil
		}
	}
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
		rp.FetchOffset = o
		rp.PartitionMaxBytes = share
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// read checks a response's partitions and returns the offsets after it,
// and whether it moves any partition on.
func (s *session) read(resp *kmsg.FetchResponse) (Offsets, bool, error) {
	ends := Offsets{}
	records := false
	for _, rt := range resp.Topics {
		t := rt.Topic
		if t == "" {
			t = s.names[rt.TopicID]
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			from, ok := s.next.Lookup(t, rp.Partition)
			if !ok {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, false, fmt.Errorf("fetch %s/%d: %w", t, rp.Partition, err)
			}
			// A partition's first batch may come cut short by its share
			// of the fetch (the broker stretches the share to a whole
			// batch only for the first partition of the response that
			// has data): nothing of it is read, and it is asked again.
			if end := nextOffset(t, rp, from); end > from {
				ends.Set(t, rp.Partition, end)
				records = true
			}
		}
	}
	return ends, records, nil
}
