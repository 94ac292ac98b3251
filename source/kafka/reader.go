package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/source"
)

type controlKind int

const (
	ctlTrigger controlKind = iota
	ctlCancel
	ctlAdd
	ctlSuspend
)

type control struct {
	kind controlKind
	id   checkpoint.ID
	ts   time.Time
	add  Offsets
}

// Reader reads the partitions one source task owns. Trigger, CancelBarrier,
// Suspend and add may be called from any goroutine; Run from exactly one.
type Reader struct {
	index     int
	cfg       Options
	log       zerolog.Logger
	control   chan control
	positions Offsets                 // next offset per owned partition; owned by Run
	epochs    Offsets                 // the leader epoch of the batch each position follows, where known (epoch.go); owned by Run
	ids       map[string]kadm.TopicID // the topics' IDs, recorded with the positions; read-only
	lag       lagTable                // see lag.go
	fetch     fetchSizer              // its fetches' partition share; owned by Run
	// suspendAt is the final checkpoint once the job is stopping (0
	// before); suspended is set when its barrier (or a later one) was
	// emitted: Run emits no more records. Both owned by Run.
	suspendAt checkpoint.ID
	suspended bool
}

func newReader(index int, cfg Options, starts, epochs Offsets, ids map[string]kadm.TopicID, log zerolog.Logger) *Reader {
	r := &Reader{
		index:     index,
		cfg:       cfg,
		ids:       ids,
		log:       log.With().Int("reader", index).Logger(),
		control:   make(chan control, 1024),
		positions: starts.Clone(),
		epochs:    epochs.Clone(),
		fetch:     newFetchSizer(cfg.FetchMaxPartitionBytes),
	}
	r.lag.setNext(starts)
	return r
}

// Index is the reader's number; its task is "source-<index>".
func (r *Reader) Index() int { return r.index }

// Trigger asks Run to take checkpoint id's snapshot and emit its barrier
// between the next two records. It never blocks the caller (the driver): if
// Run has fallen more than a thousand requests behind, the request is dropped
// with a warning and the checkpoint times out.
func (r *Reader) Trigger(id checkpoint.ID, ts time.Time) {
	r.request(control{kind: ctlTrigger, id: id, ts: ts})
}

// CancelBarrier asks Run to send a cancellation marker for id downstream.
// Like Trigger it never blocks.
func (r *Reader) CancelBarrier(id checkpoint.ID) {
	r.request(control{kind: ctlCancel, id: id})
}

// Suspend asks Run to emit no records after the barrier of checkpoint id
// (or a later one). Like Trigger it never blocks.
func (r *Reader) Suspend(id checkpoint.ID) {
	r.request(control{kind: ctlSuspend, id: id})
}

func (r *Reader) request(c control) {
	select {
	case r.control <- c:
	default:
		r.log.Warn().Uint64("checkpoint", uint64(c.id)).Msg("reader is not keeping up with checkpoint requests; dropping one")
	}
}

func (r *Reader) add(ctx context.Context, o Offsets) error {
	select {
	case r.control <- control{kind: ctlAdd, add: o}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run reads until ctx is done or an error occurs, emitting records and, when
// triggered, barriers to em. It returns ctx's error on a normal stop, once
// its clients are closed (fetchers.go).
func (r *Reader) Run(ctx context.Context, em source.Emitter) error {
	f, err := startFetchers(ctx, r.index, r.cfg, r.fetch.current, r.positions, r.epochs, r.ids, r.log)
	if err != nil {
		return err
	}
	defer f.close()
	for {
		// Once suspended, Run takes no more fetches: the fetchers stop
		// when each has one waiting.
		out := f.out
		if r.suspended {
			out = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c := <-r.control:
			if err := r.handle(ctx, f, c, em); err != nil {
				return err
			}
		case x := <-out:
			if x.err != nil {
				return fmt.Errorf("reader %d: %w", r.index, x.err)
			}
			if err := r.emit(ctx, f, x.raw.decode(), x.raw.ends, x.raw.epochs, em); err != nil {
				return err
			}
		}
	}
}

func (r *Reader) handle(ctx context.Context, f *fetchers, c control, em source.Emitter) error {
	switch c.kind {
	case ctlTrigger:
		pos, err := encodePosition(r.positions, r.epochs, r.ids)
		if err != nil {
			return fmt.Errorf("reader %d: encode offsets: %w", r.index, err)
		}
		if err := em.Barrier(ctx, c.id, c.ts, pos); err != nil {
			return err
		}
		if r.suspendAt != 0 && c.id >= r.suspendAt && !r.suspended {
			r.suspended = true
			r.log.Info().Uint64("checkpoint", uint64(c.id)).Msg("reader suspended after the final checkpoint's barrier: no more records")
		}
		return nil
	case ctlSuspend:
		r.suspendAt = c.id
	case ctlCancel:
		return em.Cancel(ctx, c.id)
	case ctlAdd:
		r.positions.Merge(c.add)
		r.lag.setNext(c.add)
		return f.add(c.add)
	}
	return nil
}

// emit hands one fetch downstream in batches of at most BatchSize, answering
// control messages between batches so a barrier is not held up by a large
// fetch. Once suspended it drops the rest of the fetch, and every fetch
// after it, from any fetcher: the position stays after the last record
// emitted.
//
// A barrier within the fetch takes the offset after the last record
// emitted before it. Once the whole fetch is emitted, each partition's
// position moves on to ends, the offset after the fetch's batches: what
// lies between its last record and there holds no record to emit (the
// markers that end transactions, aborted records, offsets compacted
// away), as the Java consumer's position skips them. Left on the last
// record, a transactional partition's position stayed on its last
// marker: its lag never reached 0, and once retention had deleted the
// whole log, a restore from it was refused as records lost
// (on_position_lost) though every record had been read. Each position
// keeps the leader epoch of the batch it follows (epochs: those of ends):
// a later epoch's marker after a record moves the position into that
// epoch.
func (r *Reader) emit(ctx context.Context, f *fetchers, fs kgo.Fetches, ends, epochs Offsets, em source.Emitter) error {
	if r.suspended {
		return nil
	}
	if err := fetchError(fs); err != nil {
		return fmt.Errorf("reader %d: %w", r.index, err)
	}
	batch := record.NewBatch(r.cfg.BatchSize)
	var err error
	// Records come partition by partition; the position of the partition
	// being read is kept aside and stored when the partition changes or a
	// batch is handed on (before any barrier can be emitted), instead of a
	// map update per record.
	var (
		have      bool
		topic     string
		partition int32
		next      int64
		epoch     int32
		n, size   int // records and their bytes, for the fetch sizer
	)
	savePosition := func() {
		if have {
			r.positions.Set(topic, partition, next)
			setEpoch(r.epochs, topic, partition, epoch)
		}
	}
	fs.EachRecord(func(kr *kgo.Record) {
		if err != nil || r.suspended {
			return
		}
		if have && (partition != kr.Partition || topic != kr.Topic) {
			savePosition()
		}
		have, topic, partition, next, epoch = true, kr.Topic, kr.Partition, kr.Offset+1, kr.LeaderEpoch
		n, size = n+1, size+len(kr.Key)+len(kr.Value)
		batch = append(batch, convert(kr))
		kr.Recycle() // the copy keeps Key, Value and Headers; kgo reuses the Record
		if len(batch) == cap(batch) {
			savePosition()
			if err = em.Records(ctx, batch); err != nil {
				return
			}
			batch = record.NewBatch(r.cfg.BatchSize)
			err = r.drainControl(ctx, f, em)
		}
	})
	if err != nil {
		return err
	}
	savePosition()
	if len(batch) > 0 {
		if err := em.Records(ctx, batch); err != nil {
			return err
		}
	} else {
		record.Release(batch)
	}
	if !r.suspended { // suspended by a barrier in the fetch: the rest was dropped
		for t, ps := range ends {
			for p, end := range ps {
				if at, ok := r.positions.Lookup(t, p); ok && end > at {
					r.positions.Set(t, p, end)
					e, ok := epochs.Lookup(t, p)
					if !ok {
						e = -1
					}
					setEpoch(r.epochs, t, p, int32(e))
				}
			}
		}
	}
	r.lag.fetched(fs, r.positions)
	if share, changed := r.fetch.fetched(n, size); changed {
		f.setShare(share)
		r.log.Debug().Int32("partition_bytes", share).Msg("fetch size follows the records' size")
	}
	return nil
}

func (r *Reader) drainControl(ctx context.Context, f *fetchers, em source.Emitter) error {
	for {
		select {
		case c := <-r.control:
			if err := r.handle(ctx, f, c, em); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// fetchError returns the first error of a fetch that the client does not
// retry by itself.
func fetchError(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if first != nil || errors.Is(err, context.Canceled) || kerr.IsRetriable(err) {
			return
		}
		first = fmt.Errorf("fetch %s/%d: %w", t, p, err)
	})
	return first
}

func convert(kr *kgo.Record) record.Record {
	rec := record.Record{
		Topic:     kr.Topic,
		Partition: kr.Partition,
		Offset:    kr.Offset,
		Timestamp: kr.Timestamp,
		Key:       kr.Key,
		Value:     kr.Value,
	}
	if len(kr.Headers) > 0 {
		rec.Headers = make([]record.Header, len(kr.Headers))
		for i, h := range kr.Headers {
			rec.Headers[i] = record.Header{Key: h.Key, Value: h.Value}
		}
	}
	return rec
}
