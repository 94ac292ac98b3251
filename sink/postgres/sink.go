package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/sink"
)

// Sink is the postgres sink. Commit and Recover may be called from any
// goroutine, not concurrently with each other; each writer belongs to one
// goroutine. See the package documentation for the protocol.
type Sink struct {
	cfg      Config
	job      string
	writers  int // the job's parallelism
	slots    int // transactions per writer
	owner    string
	fs       vfs.FS
	spoolDir string
	lock     io.Closer
	log      zerolog.Logger
	connCfg  *pgx.ConnConfig

	ctx    context.Context // ends at Close: the COPY streams' context
	cancel context.CancelFunc

	plan *plan // known after Recover

	mu       sync.Mutex
	admin    *pgx.Conn       // Recover's and Commit's own connection
	open     map[string]*txn // pre-committed transactions this process holds, by committable key
	progress map[int]checkpoint.ID
	dialErr  time.Time // last failed dial by a writer (they fail fast for a while after)

	stats struct {
		commits, rollbacks, rewritten atomic.Uint64
	}
	written struct{ rows, bytes atomic.Uint64 }
}

var (
	_ sink.Sink          = (*Sink)(nil)
	_ sink.Auditor       = (*Sink)(nil)
	_ sink.StatsReporter = (*Sink)(nil)
)

// stageTable is the session's staging table of upsert mode.
var stageTable = pgx.Identifier{"connector_stage"}

// New makes the sink and locks its spool directory; it does not contact the
// database (Recover does).
func New(cfg Config, env sink.Env) (*Sink, error) {
	connCfg, err := pgx.ParseConfig(cfg.DSN.Value())
	if err != nil {
		// pgx's message may quote the DSN: do not pass it on.
		return nil, cfgkey.Wrap("sink.dsn", fmt.Errorf("%w: sink.dsn: not a valid PostgreSQL connection string", sink.ErrInvalidConfig))
	}
	connCfg.RuntimeParams["application_name"] = appName(env.Job.Name)
	connCfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(cfg.TransactionTimeout.Milliseconds(), 10)
	fs := env.FS
	if fs == nil {
		fs = vfs.Default
	}
	dir := fs.PathJoin(cfg.SpoolDir, env.Job.Name)
	if err := fsutil.MkdirAll(fs, dir); err != nil {
		return nil, fmt.Errorf("postgres sink: spool dir: %w", err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("postgres sink: %s: %w: another instance of job %s spools there: stop it, or give this one another sink.spool_dir",
			dir, sink.ErrInUse, env.Job.Name)
	}
	c := env.Job.Checkpoint
	var tok [6]byte
	_, _ = rand.Read(tok[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &Sink{
		cfg: cfg, job: env.Job.Name, writers: env.Job.Pipeline.Parallelism,
		// The transaction filling, the pre-committed ones awaiting their
		// checkpoint (up to max_concurrent), and those of failed
		// checkpoints carried to the next (up to tolerable_failures).
		slots: c.TolerableFailures + c.MaxConcurrent + 2,
		owner: hex.EncodeToString(tok[:]),
		fs:    fs, spoolDir: dir, lock: lock, connCfg: connCfg,
		log: env.Log.With().Str("sink", "postgres").Str("table", cfg.Table).Logger(),
		ctx: ctx, cancel: cancel,
		open: map[string]*txn{}, progress: map[int]checkpoint.ID{},
	}, nil
}

// appName is the application_name of the job's sessions: how a start of
// the job finds an earlier one's (at most 63 bytes are kept; the hash
// tells long names apart).
func appName(job string) string {
	h := fnv.New32a()
	h.Write([]byte(job))
	name := fmt.Sprintf("connector %08x %s", h.Sum32(), job)
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// dial opens a connection for a writer. After a failure, writers fail fast
// for 5 s (they go on spooling meanwhile).
func (s *Sink) dial(ctx context.Context) (*pgx.Conn, error) {
	s.mu.Lock()
	recent := time.Since(s.dialErr) < 5*time.Second
	s.mu.Unlock()
	if recent {
		return nil, fmt.Errorf("postgres sink: the database did not answer %v ago", time.Since(s.dialErr).Round(time.Millisecond))
	}
	conn, err := s.connectOnce(ctx)
	if err != nil {
		s.mu.Lock()
		s.dialErr = time.Now()
		s.mu.Unlock()
	}
	return conn, err
}

// connectOnce opens a connection, with the upsert staging table.
func (s *Sink) connectOnce(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.connCfg)
	if err != nil {
		return nil, unreachable(err)
	}
	if s.cfg.Mode == ModeUpsert && s.plan != nil {
		_, err := conn.Exec(cctx, `CREATE TEMP TABLE `+stageTable.Sanitize()+` ON COMMIT DELETE ROWS AS SELECT `+quoteColumns(s.plan.columnNames())+
			` FROM `+s.plan.table.Sanitize()+` WITH NO DATA; ALTER TABLE `+stageTable.Sanitize()+` ADD COLUMN connector_seq bigserial`)
		if err != nil {
			closeConn(conn)
			return nil, unreachable(fmt.Errorf("create the staging table: %w", err))
		}
	}
	return conn, nil
}

// NewWriter opens the writer of worker instance.
func (s *Sink) NewWriter(instance int) (sink.Writer, error) {
	if s.plan == nil {
		return nil, fmt.Errorf("postgres sink: NewWriter before Recover")
	}
	return newWriter(s, instance), nil
}

func committableKey(c sink.Committable) string {
	return strconv.Itoa(c.Writer) + "/" + strconv.FormatUint(uint64(c.Checkpoint), 10)
}

func encodeCommittable(id checkpoint.ID, writer int, seal spoolSeal) (sink.Committable, error) {
	data, err := json.Marshal(seal)
	return sink.Committable{Checkpoint: id, Writer: writer, Data: data}, err
}

func decodeCommittable(c sink.Committable) (spoolSeal, error) {
	var seal spoolSeal
	if err := json.Unmarshal(c.Data, &seal); err != nil || seal.Name == "" {
		return seal, fmt.Errorf("%w: postgres sink: checkpoint %d writer %d: %q", sink.ErrBadCommittable, c.Checkpoint, c.Writer, c.Data)
	}
	return seal, nil
}

// hold registers a pre-committed transaction for Commit.
func (s *Sink) hold(c sink.Committable, t *txn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open[committableKey(c)] = t
}

// forget drops what writer's transactions held (the writer closed).
func (s *Sink) forget(writer int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := strconv.Itoa(writer) + "/"
	for k := range s.open {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(s.open, k)
		}
	}
}

func (s *Sink) committed(writer int) checkpoint.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress[writer]
}

func (s *Sink) setProgress(writer int, id checkpoint.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress[writer] = max(s.progress[writer], id)
}

// CommittedAfter lists the writers whose committed rows go past checkpoint
// id, by the progress table. It waits while the database is unreachable
// (the runtime asks before Recover, at every start).
func (s *Sink) CommittedAfter(ctx context.Context, id checkpoint.ID) ([]string, error) {
	var out []string
	err := s.retry(ctx, "at start", func() error {
		out = nil
		conn, err := s.adminConn(ctx)
		if err != nil {
			return err
		}
		table, err := s.progressTableOn(ctx, conn)
		if err != nil {
			return unreachable(err)
		}
		progress, err := readProgress(ctx, conn, table, s.job)
		if err != nil {
			if pgCode(err) == "42P01" { // no progress table yet: nothing committed
				return nil
			}
			return unreachable(err)
		}
		for w, n := range progress {
			if n > id {
				out = append(out, fmt.Sprintf("writer %d committed checkpoint %d (%s)", w, n, table.Sanitize()))
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// retry runs fn until it returns nil or an error other than errUnreachable,
// backing off and logging while the database is unreachable (its admin
// connection dropped before each wait), until ctx ends.
func (s *Sink) retry(ctx context.Context, what string, fn func() error) error {
	return sink.Retry{Log: s.log, Name: "postgres sink", System: "database", Unreachable: errUnreachable, BeforeWait: s.dropAdmin}.Do(ctx, what, fn)
}

func (s *Sink) progressTable() pgx.Identifier {
	if s.plan != nil {
		return s.plan.progress
	}
	return identifier(s.cfg.ProgressTable, "")
}

// progressTableOn is the progress table, in sink.table's schema as
// Recover places it (inspect), also before Recover ran: CommittedAfter,
// asked first at every start, read connector_progress through the search
// path, and for a table in another schema found none (nothing committed)
// or another job's.
func (s *Sink) progressTableOn(ctx context.Context, conn *pgx.Conn) (pgx.Identifier, error) {
	if s.plan != nil {
		return s.plan.progress, nil
	}
	var schema string
	err := conn.QueryRow(ctx, `SELECT coalesce((SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)), '')`,
		identifier(s.cfg.Table, "").Sanitize()).Scan(&schema)
	if err != nil {
		return nil, err
	}
	return identifier(s.cfg.ProgressTable, schema), nil
}

// Stats counts what the sink wrote and committed since it was made.
func (s *Sink) Stats() sink.Stats {
	st := sink.Stats{
		BytesWritten:          s.written.bytes.Load(),
		RecordsWritten:        s.written.rows.Load(),
		TransactionsCommitted: s.stats.commits.Load(),
		TransactionsAborted:   s.stats.rollbacks.Load(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest time.Time
	for _, t := range s.open {
		if oldest.IsZero() || t.began.Before(oldest) {
			oldest = t.began
		}
	}
	if !oldest.IsZero() {
		st.OldestOpenTransaction = time.Since(oldest)
	}
	return st
}

// Close ends the COPY streams and the sink's connection and unlocks the
// spool directory; writers close their own connections.
func (s *Sink) Close() error {
	s.cancel()
	s.mu.Lock()
	admin, lock := s.admin, s.lock
	s.admin, s.lock = nil, nil
	s.mu.Unlock()
	if admin != nil {
		closeConn(admin)
	}
	if lock == nil {
		return nil // closed before
	}
	return lock.Close()
}

func quoteColumns(cols []string) string {
	out := ""
	for i, c := range cols {
		if i > 0 {
			out += ", "
		}
		out += pgx.Identifier{c}.Sanitize()
	}
	return out
}
