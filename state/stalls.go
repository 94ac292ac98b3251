package state

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"
)

// stalls counts Pebble's write stalls (writes held because memtables wait
// to be flushed or L0 holds too many files) and their time, and logs each
// one that lasted stallLogAfter or more. A stall holds the worker's Set,
// and so its records and the next barrier: checkpoint durations that
// outlier without a reason in the checkpoint's phases are often these.
type stalls struct {
	log    zerolog.Logger
	began  atomic.Int64 // unix nanos of the stall under way; 0: none
	reason atomic.Value // string
	count  atomic.Int64
	nanos  atomic.Int64
}

// stallLogAfter is the shortest stall logged (at warn): shorter ones are
// only counted.
const stallLogAfter = 50 * time.Millisecond

func newStalls(log zerolog.Logger) *stalls {
	return &stalls{log: log.Sample(&zerolog.BurstSampler{Burst: errorBurst, Period: time.Second})}
}

func (s *stalls) listener() pebble.EventListener {
	return pebble.EventListener{
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			s.reason.Store(info.Reason)
			s.began.Store(time.Now().UnixNano())
		},
		WriteStallEnd: func() {
			began := s.began.Swap(0)
			if began == 0 {
				return
			}
			took := time.Duration(time.Now().UnixNano() - began)
			s.count.Add(1)
			s.nanos.Add(int64(took))
			if took >= stallLogAfter {
				reason, _ := s.reason.Load().(string)
				s.log.Warn().Str("reason", reason).Dur("stalled_ms", took).Msg("state writes stalled: the state database's flushes or compactions fell behind")
			}
		},
	}
}

// WriteStalls returns how many times the state database held writes and
// for how long in all, since Open. Safe from any goroutine.
func (s *Store) WriteStalls() (count int64, total time.Duration) {
	return s.stalls.count.Load(), time.Duration(s.stalls.nanos.Load())
}
