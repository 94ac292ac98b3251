package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// downAtStart is what the kinds sink.type down-at-start and source.type
// opens-at-once tell the running test: the sink's Recover runs, the
// source opened. Set by the test using them (one at a time).
var downAtStart struct {
	recovering, opened func()
}

var errSystemDown = errors.New("the sink's system is down")

// sinkDownAtStart's system cannot be reached: Recover retries, as the
// kafka, postgres and s3 sinks do (sink.Retry), until its context ends.
type sinkDownAtStart struct{}

func (sinkDownAtStart) NewWriter(int) (sink.Writer, error)               { return nil, errSystemDown }
func (sinkDownAtStart) Commit(context.Context, []sink.Committable) error { return errSystemDown }
func (sinkDownAtStart) Close() error                                     { return nil }
func (sinkDownAtStart) Recover(ctx context.Context, _ []sink.Committable) error {
	downAtStart.recovering()
	return sink.Retry{Log: zerolog.Nop(), Name: "down-at-start", System: "system", Unreachable: errSystemDown}.
		Do(ctx, "at start", func() error { return errSystemDown })
}

func init() {
	sink.Register(sink.Kind{
		Name:    "down-at-start",
		Summary: "a sink whose system cannot be reached (tests only)",
		Config:  func() any { return new(struct{}) },
		New:     func(any, sink.Env) (sink.Sink, error) { return sinkDownAtStart{}, nil },
	})
	source.Register(source.Kind{
		Name:    "opens-at-once",
		Summary: "a source of no records that says when it opened (tests only)",
		Config:  func() any { return new(struct{}) },
		Open: func(_ context.Context, _ any, env source.Env) (source.Source, error) {
			downAtStart.opened()
			return newScriptedSource(env.Readers), nil
		},
	})
}

// TestAStopEndsTheWaitForASinkUnreachableAtStart: the source opened, but
// the sink's system cannot be reached, so the restore waits in the sink's
// Recover, which retries with backoff. A stop (SIGTERM) ends Run at once,
// without error: nothing ran. Before, Recover ran under the attempt's
// context, which a stop does not end (only the source's open and the
// checkpoint storage's attach watched it), and Run waited until the sink
// came back or the process was killed.
func TestAStopEndsTheWaitForASinkUnreachableAtStart(t *testing.T) {
	recovering, opened := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	downAtStart.recovering = func() { once1.Do(func() { close(recovering) }) }
	downAtStart.opened = func() { once2.Do(func() { close(opened) }) }
	cfg, err := config.Parse("stop.yaml", []byte(`
name: stop
kafka: {brokers: ["unused:9092"]}
source: {type: opens-at-once}
checkpoint: {interval: 1h, dir: /chk}
state: {dir: /state}
pipeline: {parallelism: 1}
sink: {type: down-at-start}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	j := New(cfg, Options{FS: vfs.NewMem(), Log: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	for _, c := range []struct {
		what string
		ch   chan struct{}
	}{{"the sink's Recover", recovering}, {"the source's open", opened}} {
		select {
		case <-c.ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s never ran", c.what)
		}
	}
	cancel() // the stop, with the restore waiting for the sink alone
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a stop during the restore: %v, want nil (a clean stop)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still waits 20 s after the stop: the sink's Recover retries under a context the stop does not end")
	}
}
