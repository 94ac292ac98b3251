package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/connector-dev/connector/sink"
)

// Recover prepares the sink for a (re)start from the checkpoint whose
// committables are restored, retrying while the database is unreachable
// (the job is not ready meanwhile):
//
//  1. checks the table, its columns and types, the upsert key and the
//     privileges (problems are the config's: sink.ErrInvalidConfig);
//  2. creates the progress table if missing and takes the job's progress
//     rows over (fencing any earlier process of the job);
//  3. commits the restored transactions that the progress table shows
//     uncommitted, from their spool files;
//  4. deletes every other spool file of the job (transactions of
//     checkpoints that did not complete: the source writes their records
//     again). Their database transactions ended with their connections.
func (s *Sink) Recover(ctx context.Context, restored []sink.Committable) error {
	return s.retry(ctx, "at start", func() error { return s.recover(ctx, restored) })
}

// checkTheChecks makes sure the table's checks can be tested on the staged
// rows (plan.checkSQL: their expressions in a query of the staging table);
// those that cannot are left to the merge. It names the constraints only
// the merge meets.
func (s *Sink) checkTheChecks(ctx context.Context, conn *pgx.Conn) error {
	p := s.plan
	if p.checkSQL != "" {
		if _, err := conn.Exec(ctx, "EXPLAIN "+p.checkSQL); err != nil {
			if err = unreachable(err); errors.Is(err, errUnreachable) {
				return err
			}
			s.log.Warn().Err(err).Strs("constraints", p.checkNames).Msg("postgres sink: upsert: the table's checks cannot be tested on the staged rows at pre-commit")
			p.mergeOnly = append(p.mergeOnly, p.checkNames...)
			p.checkSQL, p.checkNames = "", nil
		}
	}
	if len(p.mergeOnly) > 0 {
		s.log.Warn().Strs("constraints", p.mergeOnly).
			Msg("postgres sink: upsert: these constraints of the table are met only when a checkpoint's rows are merged into it, after the checkpoint completed (foreign keys, unique or exclusion constraints other than the key's, checks on columns the sink does not write or on the whole row); a row one refuses fails every commit of its checkpoint, and the job restarts on it until the row or the constraint is changed")
	}
	return nil
}

func (s *Sink) recover(ctx context.Context, restored []sink.Committable) error {
	conn, err := s.adminConn(ctx)
	if err != nil {
		return err
	}
	plan, err := inspect(ctx, conn, &s.cfg)
	if err != nil {
		return unreachable(err)
	}
	s.plan = plan
	s.dropAdmin() // reconnect with the plan: upsert's staging table
	if conn, err = s.adminConn(ctx); err != nil {
		return err
	}
	if err := s.checkTheChecks(ctx, conn); err != nil {
		return err
	}
	if err := createProgress(ctx, conn, plan.progress); err != nil {
		return unreachable(err)
	}
	if err := claim(ctx, conn, plan.progress, s.job, s.owner, s.writers); err != nil {
		return unreachable(err)
	}
	s.endEarlierSessions(ctx, conn)
	progress, err := readProgress(ctx, conn, plan.progress, s.job)
	if err != nil {
		return unreachable(err)
	}
	s.mu.Lock()
	s.progress = progress
	s.mu.Unlock()
	keep := map[string]bool{".lock": true}
	for _, c := range sortedCommittables(restored) {
		seal, err := decodeCommittable(c)
		if err != nil {
			return err
		}
		if s.committed(c.Writer) >= c.Checkpoint {
			continue
		}
		if err := s.rewrite(ctx, c, seal); err != nil {
			return err
		}
	}
	names, err := s.fs.List(s.spoolDir)
	if err != nil {
		return fmt.Errorf("postgres sink: list %s: %w", s.spoolDir, err)
	}
	removed := 0
	for _, name := range names {
		if !keep[name] && strings.HasSuffix(name, ".spool") {
			if err := s.fs.Remove(s.fs.PathJoin(s.spoolDir, name)); err == nil {
				removed++
			}
		}
	}
	s.log.Info().Int("restored_transactions", len(restored)).Uint64("written_again", s.stats.rewritten.Load()).Int("spool_files_removed", removed).
		Str("owner", s.owner).Msg("postgres sink recovered")
	return nil
}

// endEarlierSessions terminates the sessions of earlier starts of the job
// (a process that lost its place but still runs: a zombie), so that their
// open transactions roll back now instead of holding the rows they
// inserted, which the rows written again here may conflict with, until
// the database's idle timeout. The progress rows are already taken over,
// so such a process could not commit anyway.
func (s *Sink) endEarlierSessions(ctx context.Context, conn *pgx.Conn) {
	var ended, refused int
	err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE t), count(*) FILTER (WHERE NOT t) FROM (
		SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() AND datname = current_database()) x`,
		appName(s.job)).Scan(&ended, &refused)
	switch {
	case err != nil:
		s.log.Warn().Err(err).Msg("postgres sink: cannot end the sessions of an earlier start of the job; its open transactions end with their connections or the idle timeout")
	case ended+refused > 0:
		s.log.Warn().Int("ended", ended).Int("refused", refused).Msg("postgres sink: ended the sessions of an earlier start of the job (a process that may still run)")
	}
}
