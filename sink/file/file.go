package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// File format names (Config.Format).
const (
	FormatJSONL = "jsonl" // the record value, one per line
	FormatRaw   = "raw"   // the record value's bytes as they are, no separator
	// FormatParquet is a Parquet file of the columns Config.Parquet names,
	// taken from the fields of JSON record values.
	FormatParquet = filefmt.Parquet
)

const (
	fileBufferSize = 256 << 10 // bytes buffered per part before a write
	maxBacklog     = 64 << 20  // buffered bytes per writer while I/O fails
)

var validJob = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func init() {
	sink.Register(sink.Kind{
		Name:    "file",
		Summary: "exactly-once part files in a directory, made visible by rename when a checkpoint completes",
		Config:  func() any { return new(Config) },
		New: func(cfg any, env sink.Env) (sink.Sink, error) {
			c := *cfg.(*Config)
			c.Job = env.Job.Name
			c.Writers = env.Job.Pipeline.Parallelism
			return New(c, env.FS, env.Log)
		},
	})
}

// Config configures the file sink: the sink: section of a job file (with
// type: file), plus the job name and a clock.
type Config struct {
	// Path is the output directory (created if missing). Only committed
	// files are visible there; see the package documentation for names.
	Path string `yaml:"path" doc:"the output directory; only committed files are visible in it"`
	// Format is jsonl (one value per line) or raw (the values' bytes).
	Format string `yaml:"format" default:"jsonl" doc:"jsonl (one record value per line) | raw | parquet"`
	// Parquet is the schema of format: parquet (columns from JSON fields),
	// its compression and row group size.
	Parquet filefmt.ParquetConfig `yaml:"parquet" doc:"format: parquet: columns (name, type, nullable, field), compression, row_group_size"`
	// RollSize closes a part once it holds this many bytes and starts a new
	// one. Rolling is independent of checkpoints.
	RollSize config.ByteSize `yaml:"roll_size" default:"128MiB" doc:"start a new part file at this size..."`
	// RollAge closes a part once it is this old, at the next Write or
	// pre-commit; zero disables rolling by age.
	RollAge time.Duration `yaml:"roll_age" default:"1m" doc:"...or this age (checked at every write and checkpoint), whichever comes first"`
	// RollOnCheckpoint rolls the open part at every pre-commit, so that
	// every completed checkpoint makes everything written before it
	// visible, at the price of a file per checkpoint per worker.
	RollOnCheckpoint bool `yaml:"roll_on_checkpoint" doc:"roll the open file at every checkpoint: output visible at each checkpoint, one file per checkpoint and worker"`
	// Writers is the job's parallelism: Recover hands an open file of a
	// writer below it to that writer again and commits the others (the job
	// scaled down). Zero commits every restored open file at Recover.
	Writers int `yaml:"-"`
	// Job is the job name; it is part of every file name, which lets two jobs
	// share a directory. Letters, digits, '.', '_' and '-', at most 100.
	Job string `yaml:"-"`
	// Now is the clock for RollAge (default time.Now).
	Now func() time.Time `yaml:"-"`
}

// Validate reports every unusable value under its key.
func (c *Config) Validate(p *spec.Problems) {
	p.Required("path", c.Path)
	spec.OneOf(p, "format", "format", c.Format, filefmt.Formats...)
	c.Parquet.Validate(p, c.Format)
	spec.Positive(p, "roll_size", c.RollSize)
	spec.AtMost(p, "roll_size", c.RollSize, maxRollSize)
	spec.NotNegative(p, "roll_age", c.RollAge)
	spec.AtMost(p, "roll_age", c.RollAge, maxRollAge)
}

// Upper bounds of rolling: far above any sensible part file, low enough
// that a typo does not leave output invisible for good (a part becomes
// visible only once it rolls).
const (
	maxRollSize = config.TiB
	maxRollAge  = 7 * 24 * time.Hour
)

// fill completes a Config built in code (the config layer has already filled
// and checked one from a file) and checks it, with the job name.
func (c *Config) fill() error {
	if err := spec.Fill(c, "", nil); err != nil {
		return err
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	var p spec.Problems
	spec.ValidateAll(c, "sink", &p)
	if !validJob.MatchString(c.Job) {
		p.Add("name", "%q: a job name in file names needs 1-100 of [A-Za-z0-9._-], starting with a letter or digit", c.Job)
	}
	if len(p.List()) > 0 {
		return fmt.Errorf("%w: %s", sink.ErrInvalidConfig, &p)
	}
	return nil
}

// File is the file sink: exactly-once output as immutable part files in one
// directory, made visible by rename when a checkpoint completes.
//
// Commit and Recover may be called from any goroutine, but not concurrently
// with each other; each Writer belongs to one goroutine (see Writer).
type File struct {
	cfg   Config
	fs    vfs.FS
	log   zerolog.Logger
	names names

	mu      sync.Mutex
	writers map[int]bool // instances with an open writer
	lock    io.Closer    // the job's lock on the directory; nil once closed
	// resume holds the open files Recover restored, by writer, until
	// NewWriter takes them; restored is the newest checkpoint among
	// Recover's committables.
	resume   map[int]*openState
	restored checkpoint.ID

	// Counted for Stats, from any goroutine.
	bytesWritten   atomic.Uint64 // by the writers' parts (part.flush)
	filesCommitted atomic.Uint64 // renamed into place by Commit
}

var (
	_ sink.Sink          = (*File)(nil)
	_ sink.StatsReporter = (*File)(nil)
)

// New fills cfg's defaults, validates it and creates the output directory.
// fs is vfs.Default in production.
func New(cfg Config, fs vfs.FS, log zerolog.Logger) (*File, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := fsutil.MkdirAll(fs, cfg.Path); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	nm := newNames(cfg.Job, cfg.Format)
	lock, err := fs.Lock(fs.PathJoin(cfg.Path, nm.lockName()))
	if err != nil {
		return nil, fmt.Errorf("file sink: %s: %w: another instance of job %s writes there (lock file %s): stop it, or give this one another sink.path",
			cfg.Path, sink.ErrInUse, cfg.Job, nm.lockName())
	}
	return &File{
		cfg:     cfg,
		fs:      fs,
		log:     log.With().Str("sink", "file").Str("job", cfg.Job).Str("path", cfg.Path).Logger(),
		names:   nm,
		lock:    lock,
		writers: make(map[int]bool),
	}, nil
}

// NewWriter opens the writer of worker instance. At most one writer per
// instance may be open at a time.
func (s *File) NewWriter(instance int) (sink.Writer, error) {
	if instance < 0 {
		return nil, fmt.Errorf("file sink: writer instance %d is negative", instance)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writers[instance] {
		return nil, fmt.Errorf("file sink: writer %d is already open", instance)
	}
	s.writers[instance] = true
	resume := s.resume[instance]
	delete(s.resume, instance)
	w, err := newFileWriter(s, instance, s.restored, resume)
	if err != nil {
		delete(s.writers, instance)
		return nil, err
	}
	return w, nil
}

func (s *File) release(instance int) {
	s.mu.Lock()
	delete(s.writers, instance)
	s.mu.Unlock()
}

// Commit renames every pending file the committables name into place and
// fsyncs the directory. It is idempotent: a file already renamed is skipped.
// It commits all it can before returning the errors it met (ErrCommitFailed,
// ErrCommitLost, ErrBadCommittable).
func (s *File) Commit(ctx context.Context, cs []sink.Committable) error {
	var errs []error
	renamed, skipped := 0, 0
	for _, c := range cs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("file sink commit: %w: %w", sink.ErrCommitFailed, err)
		}
		files, _, err := s.names.decode(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			did, err := s.commitFile(f)
			if err != nil {
				errs = append(errs, fmt.Errorf("file sink commit checkpoint %d writer %d: %w", c.Checkpoint, c.Writer, err))
			} else if did {
				renamed++
				crashpoint.Hit(crashpoint.MidCommit) // tests: die between two renames
			} else {
				skipped++
			}
		}
	}
	if err := fsutil.SyncDir(s.fs, s.cfg.Path); err != nil {
		errs = append(errs, fmt.Errorf("file sink commit: %w: %w", sink.ErrCommitFailed, err))
	}
	s.filesCommitted.Add(uint64(renamed))
	err := errors.Join(errs...)
	ev := s.log.Debug()
	if err != nil {
		ev = s.log.Error().Err(err)
	}
	ev.Int("committables", len(cs)).Int("renamed", renamed).Int("already_committed", skipped).Msg("commit")
	return err
}

// commitFile renames one rolled file into place. It reports whether it
// renamed; false with no error means it was committed before. It never
// replaces a committed file: a rolled file whose final name is taken means
// checkpoint ids were reused (the checkpoint dir was reset while the output
// stayed), and is refused with ErrCommitConflict rather than losing the
// committed file's records.
func (s *File) commitFile(r rename) (bool, error) {
	to := s.fs.PathJoin(s.cfg.Path, r.To)
	from := s.fs.PathJoin(s.cfg.Path, r.From)
	if _, err := s.fs.Stat(to); err == nil {
		if _, perr := s.fs.Stat(from); perr != nil {
			return false, nil // committed before
		}
		// Both names: a crash in the middle of a rename on a filesystem
		// that does not make renames atomic leaves the same file under
		// both; anything else is a reused name.
		same, err := sameContent(s.fs, from, to)
		if err != nil {
			return false, fmt.Errorf("%w: compare %s with %s: %w", sink.ErrCommitFailed, from, to, err)
		}
		if !same {
			return false, fmt.Errorf("%w: %s would replace the committed %s (was checkpoint.dir reset while sink.path was kept?)", sink.ErrCommitConflict, from, to)
		}
		if err := s.fs.Remove(from); err != nil {
			return false, fmt.Errorf("%w: remove %s: %w", sink.ErrCommitFailed, from, err)
		}
		return false, nil
	}
	err := s.fs.Rename(from, to)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("%w: rename %s: %w", sink.ErrCommitFailed, from, err)
	}
	_, serr := s.fs.Stat(to)
	switch {
	case serr == nil:
		return false, nil
	case errors.Is(serr, os.ErrNotExist):
		return false, fmt.Errorf("%w: neither %s nor %s exists", sink.ErrCommitLost, from, to)
	default:
		return false, fmt.Errorf("%w: stat %s: %w", sink.ErrCommitFailed, to, serr)
	}
}

// Recover commits restored (as Commit does), cuts every restored open
// file back to its recorded size and keeps it for its writer (or commits it,
// for a writer the job no longer has), then removes every other hidden file
// of this job (other jobs' files in the directory are left alone): files
// written after the restored checkpoint, whose records the source will
// replay. It must run before any writer opens.
func (s *File) Recover(ctx context.Context, restored []sink.Committable) error {
	s.mu.Lock()
	open := len(s.writers)
	s.mu.Unlock()
	if open > 0 {
		return fmt.Errorf("file sink recover: %d writers are open; Recover would delete their parts", open)
	}
	if err := s.Commit(ctx, restored); err != nil {
		return fmt.Errorf("file sink recover: %w", err)
	}
	resume, after, err := s.restoreOpen(ctx, restored)
	if err != nil {
		return fmt.Errorf("file sink recover: %w", err)
	}
	keep := make(map[string]bool, len(resume))
	for _, o := range resume {
		keep[o.Name] = true
	}
	list, err := s.fs.List(s.cfg.Path)
	if err != nil {
		return fmt.Errorf("file sink recover: %w: list %s: %w", sink.ErrCommitFailed, s.cfg.Path, err)
	}
	var errs []error
	removed := 0
	for _, name := range list {
		if !s.names.ownHidden(name) || keep[name] {
			continue
		}
		if err := s.fs.Remove(s.fs.PathJoin(s.cfg.Path, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
			continue
		}
		removed++
	}
	if err := fsutil.SyncDir(s.fs, s.cfg.Path); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("file sink recover: %w: %w", sink.ErrCommitFailed, err)
	}
	s.mu.Lock()
	s.resume, s.restored = resume, after
	s.mu.Unlock()
	s.log.Info().Int("restored_committables", len(restored)).Int("resumed_open_files", len(resume)).
		Int("removed_hidden", removed).Msg("recovered")
	return nil
}

// restoreOpen cuts each writer's open file of restored back to its durable
// size. It returns the files to resume, by writer, and the newest
// checkpoint of restored. A file of a writer at or above cfg.Writers is
// committed instead, named as if the restored checkpoint had rolled it.
func (s *File) restoreOpen(ctx context.Context, restored []sink.Committable) (map[int]*openState, checkpoint.ID, error) {
	var after checkpoint.ID
	rolledAt := map[int]int{} // files each writer's pre-commit of after rolled, to number one more
	for _, c := range restored {
		after = max(after, c.Checkpoint)
	}
	resume := map[int]*openState{}
	for _, c := range restored {
		renames, o, err := s.names.decode(c)
		if err != nil {
			return nil, 0, err
		}
		if c.Checkpoint == after {
			rolledAt[c.Writer] += len(renames)
		}
		if o == nil {
			continue
		}
		if prev := resume[c.Writer]; prev != nil && prev.Name != o.Name {
			return nil, 0, fmt.Errorf("%w: writer %d has two open files, %s and %s", sink.ErrBadCommittable, c.Writer, prev.Name, o.Name)
		}
		resume[c.Writer] = o
	}
	for w, o := range resume {
		path := s.fs.PathJoin(s.cfg.Path, o.Name)
		closed := rename{From: o.Name, To: s.names.finalName(w, after, rolledAt[w])}
		if _, err := s.fs.Stat(path); errors.Is(err, os.ErrNotExist) {
			if _, err := s.fs.Stat(s.fs.PathJoin(s.cfg.Path, closed.To)); err == nil {
				delete(resume, w) // closed out and committed by an earlier Recover of this checkpoint
				continue
			}
			later, aerr := s.CommittedAfter(ctx, after)
			if aerr == nil && len(later) > 0 {
				// Committed by a later checkpoint than the one restored:
				// the runtime already decided to restore this one anyway.
				s.log.Error().Str("file", o.Name).Uint64("checkpoint", uint64(after)).Strs("committed_after", later).
					Msg("the open file of the restored checkpoint was committed by a later one; its records are written again")
				delete(resume, w)
				continue
			}
			return nil, 0, fmt.Errorf("%w: writer %d's open file %s of checkpoint %d is gone", sink.ErrCommitLost, w, o.Name, after)
		}
		if err := fsutil.Truncate(s.fs, path, o.Size); err != nil {
			return nil, 0, fmt.Errorf("%w: writer %d's open file: %w", sink.ErrCommitLost, w, err)
		}
		if s.cfg.Writers > 0 && w < s.cfg.Writers {
			if _, err := filefmt.Resume(s.cfg.Format, s.cfg.Parquet, o.Format); err == nil {
				continue
			} else if !errors.Is(err, filefmt.ErrSchemaChanged) {
				return nil, 0, fmt.Errorf("writer %d's open file %s: %w", w, o.Name, err)
			}
			s.log.Warn().Str("file", o.Name).Msg("the format or parquet schema changed since the open file was begun: it is closed and committed as it is")
		}
		if err := s.closeOut(path, o); err != nil {
			return nil, 0, fmt.Errorf("writer %d's open file: %w", w, err)
		}
		if _, err := s.commitFile(closed); err != nil {
			return nil, 0, fmt.Errorf("writer %d's open file, of a writer the job no longer has: %w", w, err)
		}
		s.filesCommitted.Add(1)
		delete(resume, w)
	}
	return resume, after, nil
}

// closeOut completes a restored open file no writer goes on with: its
// format's last bytes (a Parquet footer) are appended at its recorded size
// and the file fsynced.
func (s *File) closeOut(path string, o *openState) error {
	tail, err := filefmt.Finish(o.Format)
	if err != nil {
		return fmt.Errorf("close %s: %w", o.Name, err)
	}
	if len(tail) == 0 {
		return nil
	}
	f, err := s.fs.OpenReadWrite(path, "sink-file")
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	if _, err := f.WriteAt(tail, o.Size); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: write %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: sync %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	return f.Close()
}

// Stats returns the bytes the writers wrote into part files (committed or
// not yet) and the files Commit renamed into place, since New. Safe from
// any goroutine.
func (s *File) Stats() sink.Stats {
	return sink.Stats{BytesWritten: s.bytesWritten.Load(), FilesCommitted: s.filesCommitted.Load()}
}

// Close releases the job's lock on the output directory; writers are
// closed on their own.
func (s *File) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	return err
}

var _ sink.Auditor = (*File)(nil)

// CommittedAfter lists the committed files of this job written at barriers
// after id: output that a checkpoint after id made visible.
func (s *File) CommittedAfter(_ context.Context, id checkpoint.ID) ([]string, error) {
	list, err := s.fs.List(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("file sink: list %s: %w", s.cfg.Path, err)
	}
	var out []string
	for _, name := range list {
		if n, ok := s.names.committedAt(name); ok && n > id {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// sameContent reports whether two files hold the same bytes.
func sameContent(fs vfs.FS, a, b string) (bool, error) {
	fa, err := fs.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := fs.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ra, rb := bufio.NewReader(fa), bufio.NewReader(fb)
	for {
		ca, ea := ra.ReadByte()
		cb, eb := rb.ReadByte()
		if ea != nil || eb != nil {
			return errors.Is(ea, io.EOF) && errors.Is(eb, io.EOF), nil
		}
		if ca != cb {
			return false, nil
		}
	}
}
