package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/sink"
)

// The progress table holds one row per writer of each job: the last
// checkpoint whose rows the writer committed, and the owner (the sink
// instance, one per start of the job) allowed to move it. The row is
// updated in the same transaction as the rows, as the transaction's last
// statement before COMMIT, so it is the sink's decision record: checkpoint
// n's rows of writer w are in the table iff checkpoint >= n.
//
// The update is conditional: the checkpoint only grows, and only its
// owner moves it. A second process of the job (or a zombie of an earlier
// start) can therefore never commit rows for a checkpoint already
// committed, nor commit at all once another start took the rows over.

// errFenced: another start of the job owns the writer's progress, or has
// committed this checkpoint already.
var errFenced = errors.New("fenced: another process of the job took over the sink")

func createProgress(ctx context.Context, conn *pgx.Conn, table pgx.Identifier) error {
	_, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table.Sanitize()+` (
		job text NOT NULL,
		writer integer NOT NULL,
		checkpoint bigint NOT NULL,
		owner text NOT NULL,
		updated_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (job, writer))`)
	switch pgCode(err) {
	case "":
		return nil
	case "23505", "42P07": // created concurrently by another process
		return nil
	case "42501":
		return cfgkey.Wrap("sink.progress_table", fmt.Errorf("%w: sink.progress_table: cannot create %s: %w (create it, or GRANT CREATE on its schema)", sink.ErrInvalidConfig, table.Sanitize(), err))
	}
	return fmt.Errorf("create the progress table %s: %w", table.Sanitize(), err)
}

// claim makes owner the owner of every progress row of job, and of those of
// writers 0..writers-1 (created at checkpoint 0 if missing).
func claim(ctx context.Context, conn *pgx.Conn, table pgx.Identifier, job, owner string, writers int) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE `+table.Sanitize()+` SET owner = $2 WHERE job = $1`, job, owner); err != nil {
			return claimErr(table, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+table.Sanitize()+` (job, writer, checkpoint, owner)
			SELECT $1, w, 0, $2 FROM generate_series(0, $3 - 1) AS w ON CONFLICT (job, writer) DO NOTHING`, job, owner, writers)
		return claimErr(table, err)
	})
}

func claimErr(table pgx.Identifier, err error) error {
	if pgCode(err) == "42501" {
		return cfgkey.Wrap("sink.progress_table", fmt.Errorf("%w: sink.progress_table: %w (GRANT SELECT, INSERT, UPDATE ON %s)", sink.ErrInvalidConfig, err, table.Sanitize()))
	}
	return err
}

// readProgress returns each writer's last committed checkpoint.
func readProgress(ctx context.Context, conn *pgx.Conn, table pgx.Identifier, job string) (map[int]checkpoint.ID, error) {
	rows, err := conn.Query(ctx, `SELECT writer, checkpoint FROM `+table.Sanitize()+` WHERE job = $1`, job)
	if err != nil {
		return nil, err
	}
	out := map[int]checkpoint.ID{}
	var w int
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&w, &n}, func() error {
		out[w] = checkpoint.ID(n)
		return nil
	})
	return out, err
}

// markCommitted moves writer's progress to n inside tx, as its last
// statement before COMMIT; errFenced if it cannot (see above).
func markCommitted(ctx context.Context, conn *pgx.Conn, table pgx.Identifier, job, owner string, writer int, n checkpoint.ID) error {
	tag, err := conn.Exec(ctx, `INSERT INTO `+table.Sanitize()+` AS p (job, writer, checkpoint, owner, updated_at) VALUES ($1, $2, $3, $4, now())
		ON CONFLICT (job, writer) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, updated_at = now()
		WHERE p.checkpoint < EXCLUDED.checkpoint AND p.owner = EXCLUDED.owner`, job, writer, int64(n), owner)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: writer %d, checkpoint %d", errFenced, writer, n)
	}
	return nil
}
