package checkpoint_test

import (
	"fmt"
	"time"

	"github.com/connector-dev/connector/checkpoint"
)

// A driver's loop in miniature: tick, perform actions in order, feed back
// acknowledgements and the store's answer.
func Example() {
	s := checkpoint.DefaultSettings()
	s.Interval = 10 * time.Second
	s.InitialDelay = 0
	c, err := checkpoint.NewCoordinator(s, []checkpoint.TaskID{"source", "sink"}, nil, 0)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var events []checkpoint.Event
	perform := func() {
		for _, a := range c.Actions() {
			fmt.Println(a)
			switch a := a.(type) {
			case checkpoint.TriggerSources:
				// The source injects barrier a.ID; every task snapshots and acks.
				events = append(events,
					checkpoint.Ack{Task: "source", ID: a.ID, Snapshot: checkpoint.Snapshot{Data: []byte(`{"orders/0":42}`)}},
					checkpoint.Ack{Task: "sink", ID: a.ID})
			case checkpoint.PersistMetadata:
				// The store writes a.Metadata durably, then:
				events = append(events, checkpoint.MetadataPersisted{ID: a.Metadata.ID})
			case checkpoint.NotifyComplete:
				// Tell the tasks: the source commits offsets, sinks commit.
			}
		}
	}
	_ = c.Step(checkpoint.Tick{Now: now})
	perform()
	for len(events) > 0 {
		ev := events[0]
		events = events[1:]
		if err := c.Step(ev); err != nil {
			panic(err)
		}
		perform()
	}
	fmt.Println("mode:", c.Mode(), "retained:", c.Settings().Retained, "last completed:", c.LastCompleted().ID)
	// Output:
	// trigger 1 at 2026-01-01T00:00:00Z
	// persist 1 tasks=[sink source]
	// notify-complete 1
	// mode: exactly_once retained: 3 last completed: 1
}

// A task with two inputs in exactly-once mode: the record read after barrier 1
// on channel 0 is held until channel 1 delivers barrier 1.
func ExampleAligner() {
	a, err := checkpoint.NewAligner[string](checkpoint.AlignerSettings{Channels: 2, Mode: checkpoint.ExactlyOnce})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	rec := func(v string) checkpoint.Element[string] {
		return checkpoint.Element[string]{Kind: checkpoint.RecordElement, Record: v, Size: int64(len(v))}
	}
	barrier := checkpoint.Element[string]{Kind: checkpoint.BarrierElement, Barrier: checkpoint.Barrier{ID: 1}}
	feed := func(ch int, el checkpoint.Element[string]) {
		outs, err := a.Process(now, ch, el)
		if err != nil {
			panic(err)
		}
		for _, o := range outs {
			switch o.Kind {
			case checkpoint.ProcessRecord:
				fmt.Printf("process %q from channel %d\n", o.Record, o.Channel)
			case checkpoint.SnapshotAndForward:
				fmt.Printf("snapshot %d, forward barrier (held back %d)\n", o.Barrier.ID, o.Alignment.HeldCount)
			}
		}
	}
	feed(0, barrier)
	feed(0, rec("after"))
	fmt.Println("channel 0 blocked:", a.Blocked(0))
	feed(1, rec("before"))
	feed(1, barrier)
	// Output:
	// channel 0 blocked: true
	// process "before" from channel 1
	// snapshot 1, forward barrier (held back 1)
	// process "after" from channel 0
}
