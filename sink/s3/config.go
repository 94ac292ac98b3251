package s3

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

func init() {
	sink.Register(sink.Kind{
		Name:    "s3",
		Summary: "exactly-once objects in S3-compatible storage: multipart uploads spanning checkpoints, completed (If-None-Match: *) when a checkpoint completes",
		Config:  func() any { return new(Config) },
		New: func(cfg any, env sink.Env) (sink.Sink, error) {
			c := *cfg.(*Config)
			c.Job = env.Job.Name
			c.Parallelism = env.Job.Pipeline.Parallelism
			c.FallBack = env.Job.Checkpoint.OnUnrestorable == checkpoint.UnrestorableFallBack
			return New(c, env.Log)
		},
	})
}

// Config configures the s3 sink: the sink: section of a job file (with
// type: s3), plus what New takes from the job.
type Config struct {
	// Bucket must exist; New checks it.
	Bucket string `yaml:"bucket" doc:"the bucket objects go to; must exist"`
	// Prefix starts every key the sink writes, visible or not.
	Prefix string `yaml:"prefix" doc:"prefix of every key the sink writes (e.g. out/)"`
	// Connection: endpoint, region, path_style, access_key_id,
	// secret_access_key (package internal/s3conn).
	s3conn.Config `yaml:",inline"`
	// Format is jsonl (one value per line), raw (the values' bytes) or
	// parquet (the columns Parquet names, from JSON values), as the file
	// sink writes them.
	Format string `yaml:"format" default:"jsonl" enum:"jsonl,raw,parquet" doc:"jsonl (one record value per line) | raw | parquet"`
	// Parquet is the schema of format: parquet (columns from JSON fields),
	// its compression and row group size. A writer holds up to
	// row_group_size of rows in memory besides its parts.
	Parquet filefmt.ParquetConfig `yaml:"parquet" doc:"format: parquet: columns (name, type, nullable, field), compression, row_group_size"`
	// PartSize: an object is uploaded in parts of this size (the last may
	// be smaller); each writer holds up to about three in memory.
	PartSize config.ByteSize `yaml:"part_size" default:"16MiB" doc:"multipart part size, 5MiB to 5GiB; memory: about 3 per writer"`
	// RollSize completes an object once it holds this many bytes and opens
	// the next. Rolling is independent of checkpoints.
	RollSize config.ByteSize `yaml:"roll_size" default:"128MiB" doc:"start a new object at this size..."`
	// RollAge completes an object once it is this old (at the next Write or
	// pre-commit); zero disables rolling by age.
	RollAge time.Duration `yaml:"roll_age" default:"1m" doc:"...or this age, whichever comes first (0: never by age)"`
	// RollOnCheckpoint rolls the open objects at every pre-commit: output
	// visible at every checkpoint, one object per checkpoint, writer and
	// bucket.
	RollOnCheckpoint bool `yaml:"roll_on_checkpoint" doc:"roll the open objects at every checkpoint (small objects, visible sooner)"`
	// PathTemplate puts each record's object under a bucket of keys below
	// <prefix><job>/, expanded from the record's time and fields (package
	// sink/internal/pathtmpl); empty: every object directly under it.
	PathTemplate string `yaml:"path_template" doc:"key path of each record's object under <prefix><job>/: literal text, {yyyy-MM-dd}-style patterns of yyyy, MM, dd, HH, mm (the record's Kafka timestamp, UTC) and {field:a.b} (a JSON field of the value; __missing__ without one), e.g. dt={yyyy-MM-dd}/hour={HH}; empty: none"`
	// MaxOpenFiles bounds the objects a writer keeps open, one per
	// bucket: a record of a new bucket beyond it rolls the least recently
	// written one first. Each open object buffers up to a part in memory.
	MaxOpenFiles int `yaml:"max_open_files" default:"32" doc:"open objects per writer, one per bucket of path_template, each buffering up to part_size; a new bucket beyond it rolls the least recently written object"`

	// Job is the job name, in every key. Letters, digits, '.', '_' and
	// '-', at most 100.
	Job string `yaml:"-"`
	// Parallelism is the job's number of writers: Recover completes the
	// open objects of writers beyond it (the job was scaled down).
	Parallelism int `yaml:"-"`
	// FallBack is checkpoint.on_unrestorable: fall_back: Recover goes on
	// when it finds output of checkpoints after the restored one.
	FallBack bool `yaml:"-"`
	// Now is the clock for RollAge (default time.Now).
	Now func() time.Time `yaml:"-"`

	// minPartSize is the smallest part_size allowed (S3's 5 MiB; tests of
	// the fake lower it).
	minPartSize config.ByteSize
	// client replaces the S3 client (tests).
	client client
	// filled: spec.Fill has run on this Config (the config layer's, with
	// the file's explicit zeros); New does not fill it again.
	filled bool
}

// MarkFilled records that the defaults are filled (spec.Filler).
func (c *Config) MarkFilled() { c.filled = true }

// S3's limits on multipart uploads.
const (
	minPartSize = 5 * config.MiB
	maxPartSize = 5 * config.GiB
	maxParts    = 10_000
	maxObject   = 5 * config.TiB
)

// Upper bounds of rolling: a typo must not leave output invisible for good
// (an object becomes visible only once it rolls).
const (
	maxRollAge = 7 * 24 * time.Hour
)

// maxOpenFiles bounds max_open_files: each open object holds up to a part
// in memory.
const maxOpenFiles = 4096

var validJob = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Validate reports every unusable value under its key.
func (c *Config) Validate(p *spec.Problems) {
	p.Required("bucket", c.Bucket)
	if c.Bucket != "" {
		if err := s3conn.CheckBucket(c.Bucket); err != nil {
			p.Add("bucket", "%v", err)
		}
	}
	if strings.HasPrefix(c.Prefix, "/") {
		p.Add("prefix", "%q: a key prefix does not start with '/'", c.Prefix)
	}
	spec.OneOf(p, "format", "format", c.Format, filefmt.Formats...)
	c.Parquet.Validate(p, c.Format)
	low := minPartSize
	if c.minPartSize > 0 {
		low = c.minPartSize
	}
	if c.PartSize < low || c.PartSize > maxPartSize {
		p.Add("part_size", "must be between %v and %v (S3's limits on a part), got %v", low, maxPartSize, c.PartSize)
	}
	spec.Positive(p, "roll_size", c.RollSize)
	spec.AtMost(p, "roll_size", c.RollSize, maxObject)
	if c.PartSize > 0 && c.RollSize/c.PartSize >= maxParts {
		p.Add("roll_size", "%v is %d parts of part_size %v; S3 takes at most %d parts per object", c.RollSize, c.RollSize/c.PartSize, c.PartSize, maxParts)
	}
	spec.NotNegative(p, "roll_age", c.RollAge)
	spec.AtMost(p, "roll_age", c.RollAge, maxRollAge)
	pathtmpl.Check(p, "path_template", c.PathTemplate)
	spec.Positive(p, "max_open_files", c.MaxOpenFiles)
	spec.AtMost(p, "max_open_files", c.MaxOpenFiles, maxOpenFiles)
}

// fill completes a Config built in code (the config layer has already
// filled and checked one from a file: filled, so its explicit zeros stay)
// and checks it, with the job name.
func (c *Config) fill() error {
	if !c.filled {
		if err := spec.Fill(c, "", nil); err != nil {
			return err
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 1
	}
	var p spec.Problems
	spec.ValidateAll(c, "sink", &p)
	if !validJob.MatchString(c.Job) {
		p.Add("name", "%q: a job name in object keys needs 1-100 of [A-Za-z0-9._-], starting with a letter or digit", c.Job)
	}
	if len(p.List()) > 0 {
		return cfgkey.Wrap(p.List()[0].Key, fmt.Errorf("%w: %s", sink.ErrInvalidConfig, &p))
	}
	return nil
}
