package checkpoint

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// AlignerSettings configure an Aligner.
type AlignerSettings struct {
	// Channels is the number of input channels, at least 1. Channels are
	// numbered 0 to Channels-1.
	Channels int
	// Mode: ExactlyOnce aligns, AtLeastOnce only tracks barriers.
	Mode Mode
	// MaxHeldBytes bounds the Size of records held back while aligning (see
	// Aligner). Going over it gives the checkpoint up with
	// ErrAlignmentLimit and releases the held input. 0 means no bound.
	MaxHeldBytes int64
}

// Validate reports the first unusable value; the error wraps ErrInvalidSettings.
func (s AlignerSettings) Validate() error {
	switch {
	case s.Channels < 1:
		return fmt.Errorf("%w: aligner: channels must be at least 1, got %d", ErrInvalidSettings, s.Channels)
	case s.Mode != ExactlyOnce && s.Mode != AtLeastOnce:
		return fmt.Errorf("%w: aligner: unknown mode %v", ErrInvalidSettings, s.Mode)
	case s.MaxHeldBytes < 0:
		return fmt.Errorf("%w: aligner: max held bytes must not be negative, got %d", ErrInvalidSettings, s.MaxHeldBytes)
	}
	return nil
}

// Aligner aligns checkpoint barriers for one task with several input channels.
// The task's loop reads one element at a time from any channel, hands it to
// Process, and performs the Outputs it gets back, in order. Like the
// Coordinator it is pure: no goroutines, no clock (time is passed in), no I/O.
// It is not safe for concurrent use; the task's goroutine owns it.
//
// # Holding input
//
// In ExactlyOnce mode, once channel c delivered barrier n, c is blocked until
// every live channel delivered n (or n is given up). The Aligner owns what
// arrives on a blocked channel: Process keeps the element (records, barriers,
// markers, ends alike) and returns nothing for it; when the alignment ends it
// hands the held input back as Outputs, in arrival order, after the
// SnapshotAndForward. So per channel, records are processed in the order they
// were read, once each, and none that followed barrier n on its channel is
// processed before n's SnapshotAndForward.
//
// The held input is bounded by MaxHeldBytes. A runtime that can stop reading a
// channel should not read from channels for which Blocked is true: then nothing
// is ever held, and backpressure stays in the channels.
//
// # Barriers, markers and ends (Flink semantics)
//
//   - The first barrier n starts aligning n. When every live channel
//     delivered n: SnapshotAndForward(n). A task with one channel snapshots at
//     once.
//   - A barrier newer than the one being aligned (exactly-once) gives the
//     older up (CancelAndForward, ErrSubsumed) and starts aligning the newer.
//     In at-least-once mode several checkpoints may be tracked at once; the
//     completion of n gives up every older one still tracked.
//   - A CancelMarker for n gives n (and anything older still tracked) up with
//     CancelAndForward and releases held input; barrier n arriving later is
//     then ignored. A marker for n on a channel follows that channel's
//     barriers for the older ones, or their absence: they cannot align.
//     In at-least-once mode, though, an older checkpoint whose barrier the
//     marker's channel delivered may still align on the others: it (and
//     what is newer) is kept, and n given up as by Abort
//     (markerAtLeastOnce).
//   - Abort(n) from the Coordinator says nothing of the older checkpoints
//     (n may have failed elsewhere while they are healthy, their barriers
//     still on their way here): it never raises the floor past them. n is
//     given up at once only while it aligns in exactly-once mode (a channel
//     delivered n, so nothing older aligns here any more); else when its
//     barrier comes (exactly-once), or its barriers are ignored
//     (at-least-once).
//   - A barrier or marker for a checkpoint that was already snapshotted or given
//     up, or a barrier repeated on a channel, is ignored.
//   - A channel that ends no longer counts: an alignment waiting only for it
//     completes. When every channel ended: InputEnded (at-least-once
//     alignments still open are given up with ErrInputEnded).
type Aligner[R any] struct {
	s        AlignerSettings
	closedIn []bool // EndOfChannel was handed in (maybe still held)
	ended    []bool // EndOfChannel was processed
	live     int    // channels not ended
	blocked  []bool

	// floor: every checkpoint <= floor was snapshotted or given up here.
	floor ID
	// aligning: checkpoints being aligned, ascending; at most one in
	// exactly-once mode.
	aligning []*alignment
	// aborted: checkpoints the Coordinator aborted while older ones were
	// aligning here, with the reason; given up once those are done.
	aborted map[ID]error

	held      []item[R]
	heldBytes int64

	work []item[R] // elements to step through in this call
	pos  int       // index into work of the element being stepped
	out  []Output[R]
}

type alignment struct {
	b     Barrier
	start time.Time
	seen  []bool // per channel: delivered b
	count int    // live channels that delivered b
}

type item[R any] struct {
	ch int
	el Element[R]
}

// NewAligner returns an Aligner with nothing received yet.
func NewAligner[R any](s AlignerSettings) (*Aligner[R], error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Aligner[R]{
		s:        s,
		closedIn: make([]bool, s.Channels),
		ended:    make([]bool, s.Channels),
		live:     s.Channels,
		blocked:  make([]bool, s.Channels),
	}, nil
}

// Process hands the Aligner element el read from channel ch at time now, and
// returns what the task must do, in order: possibly nothing (el was held or
// ignored), possibly several outputs (an alignment ended and held input was
// released). The returned slice is valid until the next call. An error (class
// ErrBadInput) means el could not have been read; it was ignored.
func (a *Aligner[R]) Process(now time.Time, ch int, el Element[R]) ([]Output[R], error) {
	if ch < 0 || ch >= len(a.closedIn) {
		return nil, fmt.Errorf("%w: channel %d out of range [0, %d)", ErrBadInput, ch, len(a.closedIn))
	}
	if a.closedIn[ch] {
		return nil, fmt.Errorf("%w: %v on channel %d after its end", ErrBadInput, el.Kind, ch)
	}
	if el.Kind > EndOfChannel {
		return nil, fmt.Errorf("%w: unknown element kind %v", ErrBadInput, el.Kind)
	}
	if el.Kind == EndOfChannel {
		a.closedIn[ch] = true
	}
	return a.run(now, item[R]{ch: ch, el: el}), nil
}

// Abort gives checkpoint id up because the Coordinator aborted it (its Abort
// action), sparing older checkpoints (see the type's doc). Like Process it
// returns the outputs to perform (valid until the next call): a
// CancelAndForward for id and any released input when id was aligning here
// (exactly-once), else nothing: id is given up when its barrier comes.
func (a *Aligner[R]) Abort(now time.Time, id ID) []Output[R] {
	return a.run(now, item[R]{ch: -1, el: Element[R]{Kind: abortElement, Cancel: CancelMarker{ID: id}}})
}

// Blocked reports whether channel ch is blocked: what it delivers is held.
func (a *Aligner[R]) Blocked(ch int) bool { return a.blocked[ch] }

// Aligning returns the checkpoints being aligned, ascending.
func (a *Aligner[R]) Aligning() []ID {
	ids := make([]ID, len(a.aligning))
	for i, e := range a.aligning {
		ids[i] = e.b.ID
	}
	return ids
}

// Held returns how many elements are held back now, and the Size of the held
// records.
func (a *Aligner[R]) Held() (count int, bytes int64) { return len(a.held), a.heldBytes }

func (a *Aligner[R]) run(now time.Time, first item[R]) []Output[R] {
	clear(a.out)
	a.out = a.out[:0]
	a.work = append(a.work[:0], first)
	for a.pos = 0; a.pos < len(a.work); a.pos++ {
		a.step(now, a.work[a.pos])
	}
	clear(a.work)
	a.work = a.work[:0]
	return a.out
}

func (a *Aligner[R]) emit(o Output[R]) { a.out = append(a.out, o) }

func (a *Aligner[R]) step(now time.Time, it item[R]) {
	if it.ch >= 0 && a.blocked[it.ch] {
		a.hold(it)
		return
	}
	switch it.el.Kind {
	case RecordElement:
		a.emit(Output[R]{Kind: ProcessRecord, Channel: it.ch, Record: it.el.Record})
	case BarrierElement:
		a.barrier(now, it.ch, it.el.Barrier)
	case CancelElement:
		reason := fmt.Errorf("checkpoint %d: %w by marker on channel %d", it.el.Cancel.ID, ErrCancelled, it.ch)
		if a.s.Mode == AtLeastOnce {
			a.markerAtLeastOnce(it.ch, it.el.Cancel.ID, reason)
		} else {
			a.cancelUpTo(it.el.Cancel.ID, reason)
		}
	case abortElement:
		a.abort(it.el.Cancel.ID, fmt.Errorf("checkpoint %d: %w by the coordinator", it.el.Cancel.ID, ErrCancelled))
	case EndOfChannel:
		a.end(now, it.ch)
	}
}

func (a *Aligner[R]) hold(it item[R]) {
	a.held = append(a.held, it)
	if it.el.Kind == RecordElement {
		a.heldBytes += it.el.Size
	}
	if a.s.MaxHeldBytes > 0 && a.heldBytes > a.s.MaxHeldBytes {
		e := a.aligning[0]
		a.cancelUpTo(e.b.ID, fmt.Errorf("checkpoint %d: %w (%d bytes held, max %d)", e.b.ID, ErrAlignmentLimit, a.heldBytes, a.s.MaxHeldBytes))
	}
}

func (a *Aligner[R]) barrier(now time.Time, ch int, b Barrier) {
	if b.ID <= a.floor {
		return // stale: snapshotted or given up here already
	}
	if reason, ok := a.aborted[b.ID]; ok {
		if a.s.Mode == ExactlyOnce {
			// Read on an unblocked channel: the older ones aligning
			// cannot align (as for a newer barrier).
			delete(a.aborted, b.ID)
			a.cancelUpTo(b.ID, reason)
		}
		return
	}
	i, found := slices.BinarySearchFunc(a.aligning, b.ID, func(e *alignment, id ID) int { return cmp.Compare(e.b.ID, id) })
	if !found {
		if a.s.Mode == ExactlyOnce {
			if len(a.aligning) > 0 {
				// b is newer: the floor is just below the one aligning.
				old := a.aligning[0]
				a.cancelUpTo(old.b.ID, fmt.Errorf("checkpoint %d: %w by barrier %d on channel %d", old.b.ID, ErrSubsumed, b.ID, ch))
				i = 0
			}
			// Nothing older than b can be aligned here any more.
			a.floor = b.ID - 1
		}
		e := &alignment{b: b, start: now, seen: make([]bool, len(a.ended))}
		a.aligning = slices.Insert(a.aligning, i, e)
	}
	e := a.aligning[i]
	if e.seen[ch] {
		return // repeated on this channel (at-least-once; blocked otherwise)
	}
	e.seen[ch] = true
	e.count++
	if e.count == a.live {
		a.snapshot(now, e)
		return
	}
	if a.s.Mode == ExactlyOnce {
		a.blocked[ch] = true
	}
}

// snapshot completes alignment e: every tracked checkpoint older than e is given
// up, e is snapshotted, and held input is released.
func (a *Aligner[R]) snapshot(now time.Time, e *alignment) {
	for _, old := range a.aligning {
		if old.b.ID >= e.b.ID {
			break
		}
		a.emit(Output[R]{Kind: CancelAndForward, Barrier: old.b,
			Reason: fmt.Errorf("checkpoint %d: %w by %d", old.b.ID, ErrSubsumed, e.b.ID)})
	}
	var delay time.Duration
	if !e.b.Timestamp.IsZero() {
		delay = max(0, e.start.Sub(e.b.Timestamp))
	}
	a.emit(Output[R]{Kind: SnapshotAndForward, Barrier: e.b, Alignment: Alignment{
		Duration: now.Sub(e.start), StartDelay: delay, HeldCount: len(a.held), HeldBytes: a.heldBytes,
	}})
	a.forget(e.b.ID)
}

// abort gives checkpoint id up for the Coordinator. Older checkpoints may
// still align here: their barriers may not even have come yet (the abort
// overtakes them), so the floor is not raised past them. If id is being
// aligned in exactly-once mode, a channel delivered its barrier without
// the older ones' (see barrier): nothing older aligns here any more, and
// id is given up at once, its held input released. Otherwise id is noted:
// its barrier, when it comes, gives it up then (exactly-once) or is
// ignored (at-least-once, whose alignment of id is dropped now: it holds
// no input).
func (a *Aligner[R]) abort(id ID, reason error) {
	if id <= a.floor {
		return
	}
	i, found := slices.BinarySearchFunc(a.aligning, id, func(e *alignment, id ID) int { return cmp.Compare(e.b.ID, id) })
	if found && a.s.Mode == ExactlyOnce {
		a.cancelUpTo(id, reason)
		return
	}
	if found {
		a.aligning = slices.Delete(a.aligning, i, i+1)
	}
	if a.aborted == nil {
		a.aborted = make(map[ID]error)
	}
	a.aborted[id] = reason
}

// markerAtLeastOnce handles a cancellation marker for id read on channel
// ch in at-least-once mode. ch's barriers for the checkpoints older than id
// came before the marker, or never will: those ch did not deliver cannot
// align here. But ch is not blocked after a barrier in this mode, so an
// older checkpoint ch did deliver may still align on the other channels:
// the oldest such one, and everything newer, is kept, and id is given up as
// the Coordinator's abort gives it up (noted, its barriers ignored). The
// marker comes from the driver's abort of id (the Coordinator's decision),
// so id needs no decline from here; checkpoints still end in increasing
// order.
func (a *Aligner[R]) markerAtLeastOnce(ch int, id ID, reason error) {
	k := slices.IndexFunc(a.aligning, func(e *alignment) bool { return e.b.ID < id && e.seen[ch] })
	if k < 0 {
		a.cancelUpTo(id, reason)
		return
	}
	kept := a.aligning[k]
	for _, e := range a.aligning[:k] {
		a.emit(Output[R]{Kind: CancelAndForward, Barrier: e.b,
			Reason: fmt.Errorf("checkpoint %d: %w: channel %d delivered %d and the marker for %d without it", e.b.ID, ErrSubsumed, ch, kept.b.ID, id)})
	}
	a.aligning = slices.Delete(a.aligning, 0, k)
	// Every checkpoint below kept that ch did not deliver is past it.
	a.floor = max(a.floor, kept.b.ID-1)
	maps.DeleteFunc(a.aborted, func(m ID, _ error) bool { return m <= a.floor })
	a.abort(id, reason)
}

// cancelUpTo gives up checkpoint id and every older one still tracked, and
// releases held input.
func (a *Aligner[R]) cancelUpTo(id ID, reason error) {
	if id <= a.floor {
		return
	}
	b := Barrier{ID: id}
	for _, e := range a.aligning {
		switch {
		case e.b.ID < id:
			a.emit(Output[R]{Kind: CancelAndForward, Barrier: e.b,
				Reason: fmt.Errorf("checkpoint %d: %w by the cancellation of %d", e.b.ID, ErrSubsumed, id)})
		case e.b.ID == id:
			b = e.b
		}
	}
	a.emit(Output[R]{Kind: CancelAndForward, Barrier: b, Reason: reason})
	a.forget(id)
}

// forget drops every alignment up to id, raises the floor to id and releases
// held input: it is stepped through next, before anything read later.
func (a *Aligner[R]) forget(id ID) {
	a.floor = id
	a.aligning = slices.DeleteFunc(a.aligning, func(e *alignment) bool { return e.b.ID <= id })
	maps.DeleteFunc(a.aborted, func(m ID, _ error) bool { return m <= id })
	clear(a.blocked)
	if len(a.held) == 0 {
		return
	}
	rest := a.work[a.pos+1:]
	work := make([]item[R], 0, len(a.held)+len(rest))
	work = append(append(work, a.held...), rest...)
	clear(a.held)
	a.held = a.held[:0]
	a.heldBytes = 0
	a.work = work
	a.pos = -1 // the loop in run steps work[0] next
}

func (a *Aligner[R]) end(now time.Time, ch int) {
	a.ended[ch] = true
	a.live--
	for _, e := range a.aligning {
		if e.seen[ch] {
			e.seen[ch] = false
			e.count--
		}
	}
	if a.live == 0 {
		for _, e := range slices.Clone(a.aligning) {
			a.cancelUpTo(e.b.ID, fmt.Errorf("checkpoint %d: %w while aligning", e.b.ID, ErrInputEnded))
		}
		a.emit(Output[R]{Kind: InputEnded})
		return
	}
	for {
		i := slices.IndexFunc(a.aligning, func(e *alignment) bool { return e.count == a.live })
		if i < 0 {
			return
		}
		a.snapshot(now, a.aligning[i])
	}
}
