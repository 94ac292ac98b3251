package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// errUnreachable classes the errors that a new connection may fix: the
// database is down, restarting, or ended the connection.
var errUnreachable = errors.New("database unreachable")

func unreachable(err error) error {
	if err == nil || errors.Is(err, errUnreachable) || errors.Is(err, sink.ErrInvalidConfig) || errors.Is(err, sink.ErrCommitLost) ||
		errors.Is(err, sink.ErrBadCommittable) || errors.Is(err, errFenced) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, starting up
			pe.Code == "53300": // too many connections
		default:
			return err // the server answered: a retry does not help
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnreachable, err)
}

// Commit commits the transactions of cs, each writer's in checkpoint order
// (its progress only grows). A transaction whose progress shows it
// committed is skipped; one this process holds open is committed; any
// other (after a restart, or one the database lost) is written again from
// its spool. A commit whose outcome is unknown (the connection failed
// during COMMIT) is decided by reading the progress table.
func (s *Sink) Commit(ctx context.Context, cs []sink.Committable) error {
	cs = sortedCommittables(cs)
	for i, c := range cs {
		if i > 0 && cs[i-1].Writer != c.Writer {
			crashpoint.Hit(crashpoint.BetweenCommits)
		}
		if err := s.commitOne(ctx, c); err != nil {
			if errors.Is(err, errFenced) {
				return fmt.Errorf("postgres sink commit of checkpoint %d writer %d: %w: %w", c.Checkpoint, c.Writer, sink.ErrInUse, err)
			}
			return fmt.Errorf("postgres sink commit of checkpoint %d writer %d: %w: %w", c.Checkpoint, c.Writer, sink.ErrCommitFailed, err)
		}
	}
	return nil
}

func sortedCommittables(cs []sink.Committable) []sink.Committable {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b sink.Committable) int {
		if a.Writer != b.Writer {
			return a.Writer - b.Writer
		}
		return int(int64(a.Checkpoint) - int64(b.Checkpoint))
	})
	return cs
}

func (s *Sink) commitOne(ctx context.Context, c sink.Committable) error {
	seal, err := decodeCommittable(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	t := s.open[committableKey(c)]
	s.mu.Unlock()
	if p := s.committed(c.Writer); p >= c.Checkpoint {
		if t != nil {
			// This process pre-committed c, yet the progress table says
			// the writer committed up to p: the job started behind it (its
			// checkpoint dir was reset, or checkpoint.on_unrestorable:
			// fall_back restored an older checkpoint), and its new
			// checkpoints' numbers are ones the table counts as done.
			// The transaction is rolled back, not left open for the next
			// checkpoint's rows to join.
			if t.conn != nil {
				closeConn(t.conn)
			}
			t.setBroken(errors.New("rolled back: the progress table is ahead"))
			s.removeOpen(c)
			s.log.Error().Int("writer", c.Writer).Uint64("checkpoint", uint64(c.Checkpoint)).Uint64("progress", uint64(p)).
				Msg("postgres sink: the progress table says this writer committed this checkpoint already; its rows are not written (the job started behind its progress table)")
		}
		s.dropSpool(c, seal)
		return nil
	}
	if t != nil && !t.isBroken() {
		err := s.finish(ctx, t.conn, c)
		if err == nil {
			s.dropSpool(c, seal)
			return nil
		}
		closeConn(t.conn) // rolls back whatever is left; the writer reconnects the slot
		t.setBroken(err)
		if errors.Is(err, errFenced) {
			s.stats.rollbacks.Add(1)
			return err
		}
		s.log.Warn().Err(err).Int("writer", c.Writer).Uint64("checkpoint", uint64(c.Checkpoint)).
			Msg("postgres sink: commit failed or its outcome is unknown; deciding by the progress table")
	}
	if err := s.rewrite(ctx, c, seal); err != nil {
		return err
	}
	s.dropSpool(c, seal)
	return nil
}

// finish commits the open transaction on conn that holds c's rows: the
// upsert's merge, the progress mark, COMMIT.
func (s *Sink) finish(ctx context.Context, conn *pgx.Conn, c sink.Committable) error {
	if s.cfg.Mode == ModeUpsert {
		if _, err := conn.Exec(ctx, mergeSQL(s.plan)); err != nil {
			return unreachable(rowsErr(err, "merge the staged rows"))
		}
	}
	if err := markCommitted(ctx, conn, s.plan.progress, s.job, s.owner, c.Writer, c.Checkpoint); err != nil {
		return unreachable(err) // errFenced passes as it is
	}
	crashpoint.Hit(crashpoint.BeforeEndTxn)
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return unreachable(err)
	}
	s.stats.commits.Add(1)
	s.setProgress(c.Writer, c.Checkpoint)
	s.removeOpen(c)
	return nil
}

func (s *Sink) removeOpen(c sink.Committable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, committableKey(c))
}

// rewrite commits c's rows from its spool in a new transaction on the
// sink's own connection, unless the progress table shows them committed;
// it retries while the database is unreachable, until ctx ends.
func (s *Sink) rewrite(ctx context.Context, c sink.Committable, seal spoolSeal) error {
	return s.retry(ctx, fmt.Sprintf("while committing checkpoint %d writer %d", c.Checkpoint, c.Writer), func() error {
		return s.rewriteOnce(ctx, c, seal)
	})
}

func (s *Sink) rewriteOnce(ctx context.Context, c sink.Committable, seal spoolSeal) error {
	conn, err := s.adminConn(ctx)
	if err != nil {
		return err
	}
	progress, err := readProgress(ctx, conn, s.plan.progress, s.job)
	if err != nil {
		return unreachable(err)
	}
	if progress[c.Writer] >= c.Checkpoint {
		s.setProgress(c.Writer, progress[c.Writer])
		s.removeOpen(c)
		return nil // the COMMIT whose outcome was unknown went through
	}
	rows, err := s.spooledRows(seal)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return unreachable(err)
	}
	target := s.plan.table
	if s.cfg.Mode == ModeUpsert {
		target = stageTable
	}
	if _, err := conn.CopyFrom(ctx, target, s.plan.columnNames(), pgx.CopyFromRows(rows)); err != nil {
		s.rollback(conn)
		return unreachable(rowsErr(err, "copy the spooled rows"))
	}
	if err := s.finish(ctx, conn, c); err != nil {
		s.rollback(conn)
		return err
	}
	s.stats.rewritten.Add(1)
	s.log.Warn().Uint64("checkpoint", uint64(c.Checkpoint)).Int("writer", c.Writer).Int("rows", len(rows)).
		Msg("postgres sink: wrote a checkpoint's rows again from the spool (the database had lost its transaction)")
	return nil
}

// spooledRows reads a spool file back into rows.
func (s *Sink) spooledRows(seal spoolSeal) ([][]any, error) {
	fields := transform.NewFieldsReader(s.plan.fields())
	rows := make([][]any, 0, seal.Rows)
	err := readSpool(s.fs, s.spoolDir, seal, func(value []byte) error {
		row, err := rowOf(fields, s.plan, &record.Record{Value: value})
		if err != nil {
			return fmt.Errorf("spooled record no longer fits the table (was it altered?): %w", err)
		}
		rows = append(rows, row)
		return nil
	})
	if errors.Is(err, errSpoolMissing) {
		return nil, fmt.Errorf("%w: %w (the rows of a completed checkpoint were neither committed nor kept)", sink.ErrCommitLost, err)
	}
	return rows, err
}

func (s *Sink) rollback(conn *pgx.Conn) {
	if _, err := conn.Exec(context.Background(), "ROLLBACK"); err != nil {
		s.dropAdmin()
	}
	s.stats.rollbacks.Add(1)
}

// adminConn returns the sink's own connection, opening it if needed.
func (s *Sink) adminConn(ctx context.Context) (*pgx.Conn, error) {
	s.mu.Lock()
	conn := s.admin
	s.mu.Unlock()
	if conn != nil && !conn.IsClosed() {
		return conn, nil
	}
	conn, err := s.connectOnce(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.admin = conn
	s.mu.Unlock()
	return conn, nil
}

func (s *Sink) dropAdmin() {
	s.mu.Lock()
	conn := s.admin
	s.admin = nil
	s.mu.Unlock()
	if conn != nil {
		closeConn(conn)
	}
}

// dropSpool deletes the spool file of a committed transaction.
func (s *Sink) dropSpool(c sink.Committable, seal spoolSeal) {
	if err := s.fs.Remove(s.fs.PathJoin(s.spoolDir, seal.Name)); err != nil && !isNotExist(err) {
		s.log.Warn().Err(err).Str("spool", seal.Name).Uint64("checkpoint", uint64(c.Checkpoint)).Msg("postgres sink: cannot delete a committed spool file; the next start does")
	}
}

// mergeSQL moves the staged rows into the table: the last row of each key
// (by staging order), inserted or updating the row of that key.
func mergeSQL(p *plan) string {
	cols := quoteColumns(p.columnNames())
	key := quoteColumns(p.key)
	var set []string
	for _, c := range p.columns {
		if !slices.Contains(p.key, c.name) {
			q := pgx.Identifier{c.name}.Sanitize()
			set = append(set, q+" = EXCLUDED."+q)
		}
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	return `INSERT INTO ` + p.table.Sanitize() + ` (` + cols + `) SELECT DISTINCT ON (` + key + `) ` + cols +
		` FROM ` + stageTable.Sanitize() + ` ORDER BY ` + key + `, connector_seq DESC ON CONFLICT (` + key + `) ` + action
}

// rowsErr says what failed, with the server's detail and the row it names.
func rowsErr(err error, what string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := fmt.Sprintf("%s: %s (SQLSTATE %s)", what, pe.Message, pe.Code)
		if pe.Detail != "" {
			msg += ": " + pe.Detail
		}
		if pe.Where != "" {
			msg += " [" + pe.Where + "]"
		}
		return fmt.Errorf("%s: %w", msg, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// progressOf reads writer's committed checkpoint (for tests and tools).
func (s *Sink) progressOf(ctx context.Context, writer int) (checkpoint.ID, error) {
	conn, err := s.adminConn(ctx)
	if err != nil {
		return 0, err
	}
	p, err := readProgress(ctx, conn, s.plan.progress, s.job)
	return p[writer], err
}
