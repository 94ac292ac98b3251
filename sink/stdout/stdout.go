package stdout

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

const stdoutBufferSize = 64 << 10

func init() {
	sink.Register(sink.Kind{
		Name:    "stdout",
		Summary: "prints each record value to standard output; AT-LEAST-ONCE (a restart prints again; checkpoint.mode defaults to at_least_once)",
		Config:  func() any { return new(Config) },
		New: func(cfg any, env sink.Env) (sink.Sink, error) {
			return New(env.Stdout, *cfg.(*Config)), nil
		},
	})
}

// Config is the sink: section of a job file with type: stdout.
type Config struct {
	// Format is jsonl (each value and '\n') or raw (the value's bytes,
	// nothing added).
	Format string `yaml:"format" default:"jsonl" enum:"jsonl,raw" doc:"jsonl (one record value per line) | raw"`
}

// Formats.
const (
	FormatJSONL = "jsonl"
	FormatRaw   = "raw"
)

// Validate checks the format.
func (c *Config) Validate(p *spec.Problems) {
	spec.OneOf(p, "format", "format", c.Format, FormatJSONL, FormatRaw)
}

// DefaultJob makes at_least_once the job's checkpoint.mode when the file
// does not write one: what the kind can keep. A dump of the job then loads
// again (ValidateJob refuses a written exactly_once).
func (c *Config) DefaultJob(j *config.Job, given func(string) bool) {
	if !given("checkpoint.mode") {
		j.Checkpoint.Mode = checkpoint.AtLeastOnce
	}
}

// ValidateJob refuses checkpoint.mode: exactly_once written in the file:
// printed output cannot be taken back, so the job could not keep that
// promise.
func (c *Config) ValidateJob(j *config.Job, p *spec.Problems) {
	if j.Given("checkpoint.mode") && j.Checkpoint.Mode == checkpoint.ExactlyOnce {
		p.Add("checkpoint.mode", "exactly_once cannot hold with sink.type stdout, which is at-least-once (a restart prints again): write at_least_once, or use an exactly-once sink (file, s3, kafka, postgres)")
	}
}

// Stdout is a sink for trying things out: it writes each record value
// (followed by '\n' in format jsonl) to an io.Writer (os.Stdout in the
// binary).
//
// It is AT-LEAST-ONCE, not exactly-once: what is printed cannot be taken
// back, so after a restart the records since the last completed checkpoint
// are printed again. PreCommit flushes; Commit and Recover do nothing.
// Writers buffer whole lines and write them under a shared lock, so the lines
// of parallel writers never interleave mid-line.
type Stdout struct {
	mu  sync.Mutex
	w   io.Writer
	sep []byte // after each value: "\n" for jsonl, nothing for raw
}

var _ sink.Sink = (*Stdout)(nil)

// New returns a Stdout sink writing to w in cfg's format (default jsonl).
func New(w io.Writer, cfg Config) *Stdout {
	s := &Stdout{w: w, sep: []byte("\n")}
	if cfg.Format == FormatRaw {
		s.sep = nil
	}
	return s
}

// NewWriter returns a writer; any number may be open.
func (s *Stdout) NewWriter(int) (sink.Writer, error) { return &stdoutWriter{s: s}, nil }

// Commit does nothing: output is visible as soon as it is flushed.
func (s *Stdout) Commit(context.Context, []sink.Committable) error { return nil }

// Recover does nothing: printed output cannot be removed.
func (s *Stdout) Recover(context.Context, []sink.Committable) error { return nil }

// Close does nothing; the caller owns the io.Writer.
func (s *Stdout) Close() error { return nil }

type stdoutWriter struct {
	s   *Stdout
	buf []byte
}

func (w *stdoutWriter) Write(_ context.Context, r *record.Record) error {
	w.buf = append(append(w.buf, r.Value...), w.s.sep...)
	if len(w.buf) >= stdoutBufferSize {
		return w.flush()
	}
	return nil
}

// flush writes the buffered lines. On error they stay buffered and are
// written again by the next flush (at-least-once).
func (w *stdoutWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if _, err := w.s.w.Write(w.buf); err != nil {
		return fmt.Errorf("stdout sink: %w: %w", sink.ErrNotDurable, err)
	}
	w.buf = w.buf[:0]
	return nil
}

func (w *stdoutWriter) PreCommit(context.Context, checkpoint.ID) ([]sink.Committable, error) {
	return nil, w.flush()
}

func (w *stdoutWriter) Committed(checkpoint.ID) {}

// Close flushes what is buffered: for an at-least-once sink, printing it is
// better than dropping it.
func (w *stdoutWriter) Close() error { return w.flush() }
