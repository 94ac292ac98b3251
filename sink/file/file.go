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
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
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
	Format string `yaml:"format" default:"jsonl" enum:"jsonl,raw,parquet" doc:"jsonl (one record value per line) | raw | parquet"`
	// Parquet is the schema of format: parquet (columns from JSON fields),
	// its compression and row group size.
	Parquet filefmt.ParquetConfig `yaml:"parquet" doc:"format: parquet: columns (name, type, nullable, field), compression, row_group_size"`
	// RollSize closes a part once it holds this many bytes and starts a new
	// one. Rolling is independent of checkpoints.
	RollSize config.ByteSize `yaml:"roll_size" default:"128MiB" doc:"start a new part file at this size..."`
	// RollAge closes a part once it is this old, at the next Write or
	// pre-commit; zero disables rolling by age.
	RollAge time.Duration `yaml:"roll_age" default:"1m" doc:"...or this age (checked at every write and checkpoint), whichever comes first (0: never by age)"`
	// RollOnCheckpoint rolls the open parts at every pre-commit, so that
	// every completed checkpoint makes everything written before it
	// visible, at the price of a file per checkpoint per worker (and
	// bucket).
	RollOnCheckpoint bool `yaml:"roll_on_checkpoint" doc:"roll the open files at every checkpoint: output visible at each checkpoint, one file per checkpoint, worker and bucket"`
	// PathTemplate puts each record's file in a bucket directory under
	// Path, expanded from the record's time and fields (package
	// sink/internal/pathtmpl); empty: every file in Path.
	PathTemplate string `yaml:"path_template" doc:"subdirectory of each record's file: literal text, {yyyy-MM-dd}-style patterns of yyyy, MM, dd, HH, mm (the record's Kafka timestamp, UTC) and {field:a.b} (a JSON field of the value; __missing__ without one), e.g. dt={yyyy-MM-dd}/hour={HH}; empty: all files in path"`
	// MaxOpenFiles bounds the files a writer keeps open, one per bucket:
	// a record of a new bucket beyond it rolls the least recently
	// written one first. Each open file holds a descriptor and a write
	// buffer, and with parquet up to row_group_size of rows.
	MaxOpenFiles int `yaml:"max_open_files" default:"32" doc:"open files per writer, one per bucket of path_template; a new bucket beyond it rolls the least recently written file"`
	// Writers is the job's parallelism: Recover hands an open file of a
	// writer below it to that writer again and commits the others (the job
	// scaled down). Zero commits every restored open file at Recover.
	Writers int `yaml:"-"`
	// Job is the job name; it is part of every file name, which lets two jobs
	// share a directory. Letters, digits, '.', '_' and '-', at most 100.
	Job string `yaml:"-"`
	// Now is the clock for RollAge (default time.Now).
	Now func() time.Time `yaml:"-"`

	// filled: spec.Fill has run on this Config (the config layer's, with
	// the file's explicit zeros); New does not fill it again.
	filled bool
}

// MarkFilled records that the defaults are filled (spec.Filler).
func (c *Config) MarkFilled() { c.filled = true }

// Validate reports every unusable value under its key.
func (c *Config) Validate(p *spec.Problems) {
	p.Required("path", c.Path)
	spec.OneOf(p, "format", "format", c.Format, filefmt.Formats...)
	c.Parquet.Validate(p, c.Format)
	spec.Positive(p, "roll_size", c.RollSize)
	spec.AtMost(p, "roll_size", c.RollSize, maxRollSize)
	spec.NotNegative(p, "roll_age", c.RollAge)
	spec.AtMost(p, "roll_age", c.RollAge, maxRollAge)
	pathtmpl.Check(p, "path_template", c.PathTemplate)
	spec.Positive(p, "max_open_files", c.MaxOpenFiles)
	spec.AtMost(p, "max_open_files", c.MaxOpenFiles, maxOpenFiles)
}

// Upper bounds of rolling: far above any sensible part file, low enough
// that a typo does not leave output invisible for good (a part becomes
// visible only once it rolls).
const (
	maxRollSize = config.TiB
	maxRollAge  = 7 * 24 * time.Hour
)

// maxOpenFiles bounds max_open_files: each open file holds a buffer (and,
// for parquet, up to row_group_size of rows) and a descriptor.
const maxOpenFiles = 4096

// maxDirs bounds the bucket directories a File remembers having made
// durable; past it, it forgets them all and makes them again.
const maxDirs = 4096

// fill completes a Config built in code (the config layer has already filled
// and checked one from a file: filled, so its explicit zeros stay) and
// checks it, with the job name.
func (c *Config) fill() error {
	if !c.filled {
		if err := spec.Fill(c, "", nil); err != nil {
			return err
		}
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
		return cfgkey.Wrap(p.List()[0].Key, fmt.Errorf("%w: %s", sink.ErrInvalidConfig, &p))
	}
	return nil
}

// File is the file sink: exactly-once output as immutable part files under
// one directory (in its bucket directories, with a path_template), made
// visible by rename when a checkpoint completes.
//
// Commit and Recover may be called from any goroutine, but not concurrently
// with each other; each Writer belongs to one goroutine (see Writer).
type File struct {
	cfg   Config
	fs    vfs.FS
	log   zerolog.Logger
	names names
	tmpl  *pathtmpl.Template // nil: no path_template
	// noDirect: parts are written through the page cache even where
	// direct I/O works (tests of that path).
	noDirect bool

	dirsMu sync.Mutex
	dirs   map[string]bool // bucket directories made durable, by any writer

	mu      sync.Mutex
	writers map[int]bool // instances with an open writer
	lock    io.Closer    // the job's lock on the directory; nil once closed
	// resume holds the open files Recover restored, by writer, until
	// NewWriter takes them; restored is the newest checkpoint among
	// Recover's committables.
	resume   map[int][]openState
	restored checkpoint.ID

	// Counted for Stats, from any goroutine.
	bytesWritten   atomic.Uint64 // by the writers' parts (part.flush)
	buffers        bufferList    // direct parts' buffers, from finished parts to new ones
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
	tmpl, err := pathtmpl.Parse(cfg.PathTemplate)
	if err != nil {
		return nil, cfgkey.Wrap("sink.path_template", fmt.Errorf("%w: sink.path_template: %w", sink.ErrInvalidConfig, err)) // checked by fill
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
		log:     log.With().Str("sink", "file").Str("path", cfg.Path).Logger(),
		names:   nm,
		tmpl:    tmpl,
		dirs:    make(map[string]bool),
		lock:    lock,
		writers: make(map[int]bool),
		buffers: bufferList{max: 2 * max(cfg.Writers, 1)},
	}, nil
}

// path is the path of p, a file or bucket recorded relative to
// sink.path ("" is sink.path itself).
func (s *File) path(p string) string {
	if p == "" {
		return s.cfg.Path
	}
	return s.fs.PathJoin(s.cfg.Path, p)
}

// makeBucket creates the directory of bucket, and makes its entry (and
// its parents') durable, unless a writer did so before. Safe from any
// goroutine.
func (s *File) makeBucket(bucket string) error {
	if bucket == "" {
		return nil
	}
	s.dirsMu.Lock()
	done := s.dirs[bucket]
	s.dirsMu.Unlock()
	if done {
		return nil
	}
	if err := fsutil.MkdirAll(s.fs, s.path(bucket)); err != nil {
		return err
	}
	s.dirsMu.Lock()
	if len(s.dirs) >= maxDirs {
		clear(s.dirs)
	}
	s.dirs[bucket] = true
	s.dirsMu.Unlock()
	return nil
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
// fsyncs sink.path and each bucket directory it renamed in. It is
// idempotent: a file already renamed is skipped. It commits all it can
// before returning the errors it met (ErrCommitFailed, ErrCommitLost,
// ErrBadCommittable).
func (s *File) Commit(ctx context.Context, cs []sink.Committable) error {
	var errs []error
	renamed, skipped := 0, 0
	dirs := []string{""}
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
			bucket, _ := pathtmpl.Split(f.To)
			dirs = append(dirs, bucket)
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
	if err := s.syncDirs(dirs); err != nil {
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

// syncDirs fsyncs each directory of dirs (relative to sink.path) once,
// in order of their names.
func (s *File) syncDirs(dirs []string) error {
	slices.Sort(dirs)
	var errs []error
	for _, d := range slices.Compact(dirs) {
		if err := fsutil.SyncDir(s.fs, s.path(d)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// commitFile renames one rolled file into place. It reports whether it
// renamed; false with no error means it was committed before. It never
// replaces a committed file: a rolled file whose final name is taken means
// checkpoint ids were reused (the checkpoint dir was reset while the output
// stayed), and is refused with ErrCommitConflict rather than losing the
// committed file's records.
func (s *File) commitFile(r rename) (bool, error) {
	to, from := s.path(r.To), s.path(r.From)
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
