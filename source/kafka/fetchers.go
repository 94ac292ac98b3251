package kafka

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A franz-go client keeps one fetch in flight per broker: it asks for the
// next only once the last was taken. A reader that spends as long handing
// a fetch on as the broker takes to answer the next one therefore waits
// for the broker about half its time. Options.FetchesInFlight gives a
// reader several clients (fetchers), each over a share of its partitions,
// each with its own fetch in flight; Run takes whichever fetch comes first.
// A partition belongs to one fetcher for as long as the reader runs, so
// its records still come in offset order, and positions stay per
// partition: a barrier between two fetches of different fetchers is as
// exact as between two fetches of one.

// fetcher is one client of a reader and the goroutine polling it.
type fetcher struct {
	cl    *kgo.Client
	want  chan struct{} // Run asks for the next fetch
	parts int           // partitions it consumes
}

// fetched is a fetch and the fetcher it came from.
type fetched struct {
	from *fetcher
	fs   kgo.Fetches
}

// fetchers is a reader's clients: max(1, min(FetchesInFlight, partitions))
// of them, whose partition counts differ by one at most. Owned by the
// reader's Run, which must call close before it returns.
type fetchers struct {
	reader int
	cfg    Options
	share  int32 // the partition share every client asks for
	ctx    context.Context
	stop   context.CancelFunc // ends the polling
	polls  sync.WaitGroup
	all    []*fetcher
	out    chan fetched
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
// next offset of each) and starts polling each: every fetcher has asked
// for its first fetch on return. The polling ends with ctx or close.
func startFetchers(ctx context.Context, reader int, cfg Options, share int32, start Offsets) (*fetchers, error) {
	f := &fetchers{reader: reader, cfg: cfg, share: share, out: make(chan fetched)}
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

// start makes one more fetcher, over parts, and asks it for a fetch.
func (f *fetchers) start(parts Offsets) error {
	opts := append([]kgo.Opt{
		kgo.ConsumePartitions(toKgo(parts)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		// An offset out of range is not reset silently: the fetch fails,
		// the job restarts, and the restore applies on_position_lost.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.WithPools(kgoRecordPool),
		kgo.FetchMaxBytes(f.cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(f.share),
	}, f.cfg.clientOpts(clientName(f.reader, len(f.all)))...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("reader %d: client: %w", f.reader, err)
	}
	fr := &fetcher{cl: cl, want: make(chan struct{}, 1), parts: parts.Len()}
	f.all = append(f.all, fr)
	fr.want <- struct{}{}
	f.polls.Add(1)
	go func() {
		defer f.polls.Done()
		fr.poll(f.ctx, f.out)
	}()
	return nil
}

// poll takes a fetch from the client each time Run asks for one (want), in
// the background so that Run can answer a trigger while no records arrive.
// Asking only once the previous fetch was handed on keeps the memory a
// fetcher holds to two fetches: the one being handed on and the one the
// client reads ahead meanwhile.
func (fr *fetcher) poll(ctx context.Context, out chan<- fetched) {
	for {
		select {
		case <-fr.want:
		case <-ctx.Done():
			return
		}
		fs := fr.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		select {
		case out <- fetched{from: fr, fs: fs}:
		case <-ctx.Done():
			return
		}
	}
}

// next asks fr for its next fetch. Run calls it once per fetch taken from
// fr, and not at all once suspended.
func (fr *fetcher) next() { fr.want <- struct{}{} }

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
			s.fr.cl.AddConsumePartitions(toKgo(s.o))
		}
	}
	return nil
}

// setShare asks every client for share bytes per partition from its next
// fetch on.
func (f *fetchers) setShare(maxBytes, share int32) {
	f.share = share
	for _, fr := range f.all {
		fr.cl.UpdateFetchMaxBytes(maxBytes, share)
	}
}

// close ends the polling, waits for every poll goroutine to return, and
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
