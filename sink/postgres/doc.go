// Package postgres is the PostgreSQL sink (sink.type: postgres): every
// record exactly once as a row of a table, on a stock server
// (max_prepared_transactions = 0: no two-phase commit), across crashes,
// database restarts, killed connections, failed and timed-out checkpoints.
//
// # Transactions
//
// Each worker's writer opens a database transaction at its first record
// after a pre-commit and streams its rows into it with COPY (upsert mode:
// into a session staging table). Pre-commit at barrier n ends the COPY and
// keeps the transaction open; when checkpoint n completes, Commit ends it:
// upsert merges the staged rows (INSERT ... ON CONFLICT (key) DO UPDATE,
// the last row of each key winning), the writer's progress row is moved to
// n, COMMIT. A checkpoint that fails leaves its transaction open; the next
// one to complete commits it, each writer's in checkpoint order. A
// checkpoint with nothing written opens no transaction. Locks: the open
// transactions hold only the rows they inserted (and the progress row only
// during the commit itself), so a carried transaction never blocks the
// next one.
//
// # Decision record
//
// The progress table (sink.progress_table, one row per job and writer:
// checkpoint, owner) is updated in the same transaction as the rows, as
// its last statement before COMMIT: checkpoint n's rows of writer w are
// in the table iff its progress is >= n. A COMMIT whose outcome is unknown
// (the connection failed during it) is decided by reading that row.
//
// # The spool
//
// A writer also appends each record's value to a spool file of its
// transaction (sink.spool_dir), made durable at pre-commit and named in
// the checkpoint. Whenever the database loses a transaction before its
// commit (the process died, the database restarted, the connection was
// killed, the session timed out), the transaction is written again from
// the spool in a new one, with the same progress mark; so nothing depends
// on a transaction surviving, no transaction is ever prepared, and none
// outlives its connection. A transaction whose COPY failed goes on
// spooling; Write never waits for the database.
//
// # Fencing
//
// The progress update only moves a row forward (checkpoint < n) and only
// for its owner; each start of the job (Recover) takes the job's rows
// over with a fresh owner. So a second process, or a zombie of an earlier
// start, can never commit rows of a checkpoint already committed, nor
// commit anything once another start took over: its commit fails (the
// process stops: sink.ErrInUse). Two processes on the same spool dir are
// refused at once by its lock. A start whose checkpoint dir is behind the
// progress table is refused by the runtime (CommittedAfter).
package postgres
