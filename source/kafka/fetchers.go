package kafka

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A fetcher keeps one fetch in flight per leader (fetchloop.go) and hands
// it on once Run takes it: a reader that spends as long handing a fetch on
// as the broker takes to answer the next one would wait for the broker
// about half its time. Options.FetchesInFlight gives a reader several
// fetchers, each over a share of its partitions, each with its own client
// and its own fetches in flight; Run takes whichever fetch comes first. A
// partition belongs to one fetcher for as long as the reader runs, so its
// records still come in offset order, and positions stay per partition: a
// barrier between two fetches of different fetchers is as exact as
// between two fetches of one.

// fetchMaxWait is how long a broker holds a fetch that finds no records.
const fetchMaxWait = 200 * time.Millisecond

// fetcher is one client of a reader and the goroutine fetching with it.
type fetcher struct {
	cl      *kgo.Client
	name    string                   // the client's name in the metrics
	hooks   []kgo.HookFetchBatchRead // the client's hooks that count fetched batches
	parts   int                      // partitions it consumes; owned by Run
	byName  bool                     // cl sends Fetch v12 at most (fetchByName)
	backoff time.Duration            // the wait before looking waiting partitions up (fetchFrom)
	added   added                    // partitions Run added, for the fetching goroutine
	// bufferedRecords and bufferedBytes are the records (offsets) and the
	// batches' bytes of the responses its sessions fetched and Run has not
	// taken yet: the client metrics' buffered fetch records and bytes
	// (BufferedFetchReporter).
	bufferedRecords, bufferedBytes atomic.Int64
}

// BufferedFetchReporter is a client hook that exposes counts of buffered
// fetch records and bytes (internal/metrics'). franz-go's consumer counts
// what it decoded and nobody polled; the source's clients send their own
// fetches, so a fetcher reports what the responses waiting for Run hold
// instead.
type BufferedFetchReporter interface {
	ReportBufferedFetch(records, bytes func() int64)
}

// useHooks makes hooks those the fetcher feeds: the fetch batch hooks of
// its client, and the reporters of what it buffers.
func (fr *fetcher) useHooks(hooks []kgo.Hook) {
	fr.hooks = nil
	for _, h := range hooks {
		if b, ok := h.(kgo.HookFetchBatchRead); ok {
			fr.hooks = append(fr.hooks, b)
		}
		if b, ok := h.(BufferedFetchReporter); ok {
			b.ReportBufferedFetch(fr.bufferedRecords.Load, fr.bufferedBytes.Load)
		}
	}
}

// added are partitions Run gave a fetcher while it fetches: Run adds
// (add), the fetching goroutine takes them (takeAdded) and starts over
// with them.
type added struct {
	mu    sync.Mutex
	o     Offsets
	ready chan struct{} // holds a token while o holds partitions
}

func (fr *fetcher) add(o Offsets) {
	fr.added.mu.Lock()
	if fr.added.o == nil {
		fr.added.o = Offsets{}
	}
	fr.added.o.Merge(o)
	fr.added.mu.Unlock()
	select {
	case fr.added.ready <- struct{}{}:
	default:
	}
}

// takeAdded moves the partitions added since the last call into next.
func (fr *fetcher) takeAdded(next Offsets) {
	select {
	case <-fr.added.ready:
	default:
	}
	fr.added.mu.Lock()
	next.Merge(fr.added.o)
	fr.added.o = nil
	fr.added.mu.Unlock()
}

// fetched is a fetch, or the error that stopped a fetcher.
type fetched struct {
	raw *rawFetch
	err error
}

// fetchers is a reader's clients: max(1, min(FetchesInFlight, partitions))
// of them, whose partition counts differ by one at most. Owned by the
// reader's Run, which must call close before it returns.
type fetchers struct {
	reader int
	cfg    Options
	ids    map[string]kadm.TopicID // the topics' IDs the reader knows; read-only
	log    zerolog.Logger
	share  atomic.Int32 // the partition share every fetch asks for
	ctx    context.Context
	stop   context.CancelFunc // ends the fetching
	polls  sync.WaitGroup
	all    []*fetcher
	out    chan fetched
	epochs *epochTable // the leader epochs the positions follow, for the fetches (epoch.go)
}

// clientName is fetcher j's name in the client metrics: reader i's first
// client is "source-<i>", as with one fetch in flight; the next ones
// "source-<i>.<j>".
func clientName(reader, j int) string {
	if j == 0 {
		return fmt.Sprintf("source-%d", reader)
	}
	return fmt.Sprintf("source-%d.%d", reader, j)
}

// startFetchers makes a reader's clients over its partitions (start: the
// next offset of each; epochs: the leader epoch of the batch each follows,
// where known) and starts fetching with each. The fetching ends with ctx
// or close.
func startFetchers(ctx context.Context, reader int, cfg Options, share int32, start, epochs Offsets, ids map[string]kadm.TopicID, log zerolog.Logger) (*fetchers, error) {
	f := &fetchers{reader: reader, cfg: cfg, ids: ids, log: log, out: make(chan fetched), epochs: newEpochTable(epochs)}
	f.share.Store(share)
	f.ctx, f.stop = context.WithCancel(ctx)
	n := max(1, min(cfg.FetchesInFlight, start.Len()))
	for _, parts := range splitOffsets(start, n) {
		if err := f.start(parts); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// start makes one more fetcher, over parts, and starts it fetching.
func (f *fetchers) start(parts Offsets) error {
	name := clientName(f.reader, len(f.all))
	var hooks []kgo.Hook
	if f.cfg.Hooks != nil {
		hooks = f.cfg.Hooks(name)
	}
	cl, err := kgo.NewClient(f.cfg.clientOptsWith(hooks)...)
	if err != nil {
		return fmt.Errorf("reader %d: client: %w", f.reader, err)
	}
	fr := &fetcher{cl: cl, name: name, parts: parts.Len()}
	fr.added.ready = make(chan struct{}, 1)
	fr.useHooks(hooks)
	f.all = append(f.all, fr)
	f.polls.Add(1)
	go func() {
		defer f.polls.Done()
		fr.run(f.ctx, f, parts)
	}()
	return nil
}

// add hands partitions found while the job runs to the fetchers, one by
// one (in topic and partition order) to the fetcher with the fewest, or to
// a new fetcher when every fetcher has some and the reader has fewer than
// FetchesInFlight: a reader that started with fewer partitions than
// fetches gets its fetches as partitions come.
func (f *fetchers) add(o Offsets) error {
	type share struct {
		fr    *fetcher // nil: a fetcher to start
		parts int
		o     Offsets
	}
	shares := make([]*share, len(f.all))
	for i, fr := range f.all {
		shares[i] = &share{fr: fr, parts: fr.parts, o: Offsets{}}
	}
	for _, id := range sortedPartitions(o) {
		least := shares[0]
		for _, s := range shares[1:] {
			if s.parts < least.parts {
				least = s
			}
		}
		if least.parts > 0 && len(shares) < f.cfg.FetchesInFlight {
			least = &share{o: Offsets{}}
			shares = append(shares, least)
		}
		least.parts++
		least.o.Set(id.topic, id.partition, o[id.topic][id.partition])
	}
	for _, s := range shares {
		switch {
		case s.fr == nil:
			if err := f.start(s.o); err != nil {
				return err
			}
		case s.o.Len() > 0:
			s.fr.parts = s.parts
			s.fr.add(s.o)
		}
	}
	return nil
}

// setShare asks for share bytes per partition from every fetcher's next
// fetch on.
func (f *fetchers) setShare(share int32) { f.share.Store(share) }

// close ends the fetching, waits for every fetching goroutine to return, and
// closes the clients: once it returns, nothing of the reader's fetching
// runs.
func (f *fetchers) close() {
	f.stop()
	f.polls.Wait()
	for _, fr := range f.all {
		fr.cl.Close()
	}
}

// sortedPartitions lists o's partitions in topic and partition order.
func sortedPartitions(o Offsets) []partitionID {
	all := make([]partitionID, 0, o.Len())
	for t, ps := range o {
		for p := range ps {
			all = append(all, partitionID{t, p})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].topic != all[j].topic {
			return all[i].topic < all[j].topic
		}
		return all[i].partition < all[j].partition
	})
	return all
}

// splitOffsets deals o's partitions, in topic and partition order, into n
// shares of sizes differing by one at most (n > 0; shares are empty when o
// has fewer partitions than n).
func splitOffsets(o Offsets, n int) []Offsets {
	out := make([]Offsets, n)
	for i := range out {
		out[i] = Offsets{}
	}
	for i, id := range sortedPartitions(o) {
		out[i%n].Set(id.topic, id.partition, o[id.topic][id.partition])
	}
	return out
}

// buffer counts records and bytes more (fewer, if negative) as buffered.
func (fr *fetcher) buffer(records, bytes int64) {
	fr.bufferedRecords.Add(records)
	fr.bufferedBytes.Add(bytes)
}
