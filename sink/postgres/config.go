package postgres

import (
	"slices"
	"strings"
	"time"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
)

func init() {
	sink.Register(sink.Kind{
		Name:    "postgres",
		Summary: "exactly-once into a PostgreSQL table: rows by COPY, one transaction per worker per checkpoint, with the job's progress in the same transaction",
		Config:  func() any { return new(Config) },
		New: func(cfg any, env sink.Env) (sink.Sink, error) {
			return New(*cfg.(*Config), env)
		},
	})
}

// Config is the sink: section of a job file with type: postgres.
type Config struct {
	// DSN is the connection string (URL or key=value form). It holds a
	// password: it is never printed.
	DSN config.Secret `yaml:"dsn" doc:"postgres://user:password@host:5432/db?sslmode=require; never printed"`
	// Table is name or schema.name, exact (PostgreSQL stores unquoted
	// names in lower case).
	Table string `yaml:"table" doc:"the table rows go to (name or schema.name); must exist"`
	// Columns maps columns to fields (dotted paths into the record's JSON
	// value). Empty: every column without a default and not generated,
	// from the top-level field of the same name.
	Columns map[string]string `yaml:"columns,omitempty" doc:"column: field; default: each column without a default from the field of its name"`
	// Mode: insert (COPY) or upsert (COPY into a staging table, then
	// INSERT ... ON CONFLICT (key) DO UPDATE).
	Mode string `yaml:"mode" default:"insert" enum:"insert,upsert" doc:"insert | upsert"`
	// Key is the conflict target of upsert: the columns of a primary key
	// or unique index of the table.
	Key []string `yaml:"key,omitempty" doc:"upsert: the columns of the table's primary key or a unique index"`
	// BatchSize is how many rows are handed to COPY at a time.
	BatchSize int `yaml:"batch_size" default:"1000" doc:"rows handed to COPY at a time"`
	// ProgressTable holds each writer's last committed checkpoint, written
	// in the same transaction as the rows (the decision record). Created
	// if missing; unqualified, it is in the table's schema.
	ProgressTable string `yaml:"progress_table" default:"connector_progress" doc:"the job's progress, one row per writer (created if missing)"`
	// SpoolDir keeps each pre-committed transaction's records on local
	// disk until it is committed, so that a transaction the database lost
	// (a crash, a restart, a killed connection) is written again.
	SpoolDir string `yaml:"spool_dir" default:"./data/postgres-spool" doc:"local copy of the rows awaiting commit"`
	// TransactionTimeout is the idle_in_transaction_session_timeout of
	// the sink's sessions: the database ends a transaction whose
	// connector is gone (a network partition) after it. Nothing is lost
	// then: the rows are written again from the spool.
	TransactionTimeout time.Duration `yaml:"transaction_timeout" default:"10m" doc:"the database ends a transaction idle this long; above checkpoint.timeout"`
}

// Modes.
const (
	ModeInsert = "insert"
	ModeUpsert = "upsert"
)

// Validate checks the section on its own.
func (c *Config) Validate(p *spec.Problems) {
	if c.DSN.Value() == "" {
		p.Add("dsn", "is required")
	}
	if _, _, err := splitName(c.Table); c.Table == "" {
		p.Add("table", "is required")
	} else if err != "" {
		p.Add("table", "%q: %s", c.Table, err)
	}
	if c.ProgressTable != "" {
		if _, _, err := splitName(c.ProgressTable); err != "" {
			p.Add("progress_table", "%q: %s", c.ProgressTable, err)
		}
	}
	for col, field := range c.Columns {
		switch {
		case strings.TrimSpace(col) == "":
			p.Add("columns", "a column name is empty")
		case field == "" || slices.Contains(strings.Split(field, "."), ""):
			p.Add("columns."+col, "%q is not a field path (dotted, no empty segment)", field)
		}
	}
	spec.OneOf(p, "mode", "mode", c.Mode, ModeInsert, ModeUpsert)
	switch {
	case c.Mode == ModeUpsert && len(c.Key) == 0:
		p.Add("key", "is required with mode upsert (the columns of a primary key or unique index)")
	case c.Mode == ModeInsert && len(c.Key) > 0:
		p.Add("key", "is only used with mode upsert")
	}
	for i, k := range c.Key {
		if k == "" || slices.Index(c.Key, k) != i {
			p.Add("key", "%v: empty or repeated column", c.Key)
			break
		}
		if len(c.Columns) > 0 {
			if _, ok := c.Columns[k]; !ok {
				p.Add("key", "column %s is not one of sink.columns", k)
			}
		}
	}
	p.Between("batch_size", c.BatchSize, 1, 100_000)
	p.Required("spool_dir", c.SpoolDir)
	spec.Positive(p, "transaction_timeout", c.TransactionTimeout)
	spec.AtMost(p, "transaction_timeout", c.TransactionTimeout, 24*time.Hour)
}

// ValidateJob checks the section against the job.
func (c *Config) ValidateJob(j *config.Job, p *spec.Problems) {
	if c.TransactionTimeout > 0 && c.TransactionTimeout <= j.Checkpoint.Timeout {
		p.Add("sink.transaction_timeout", "%v must be longer than checkpoint.timeout (%v)", c.TransactionTimeout, j.Checkpoint.Timeout)
	}
}

// splitName splits name or schema.name; why is "" when it is valid.
func splitName(s string) (schema, name, why string) {
	parts := strings.Split(s, ".")
	switch {
	case len(parts) > 2:
		return "", "", "want name or schema.name"
	case slices.Contains(parts, ""):
		return "", "", "has an empty part"
	case len(parts) == 2:
		return parts[0], parts[1], ""
	}
	return "", parts[0], ""
}
