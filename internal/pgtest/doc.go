// Package pgtest hands tests a real PostgreSQL server and fresh databases.
//
// It owns the choice of server for a test run and nothing else:
//
//   - PG_DSN names the server (a superuser DSN). scripts/test starts a
//     throwaway PostgreSQL 15 with scripts/postgres and exports it; by hand:
//     eval "$(scripts/postgres start)"; export PG_DSN.
//   - Without PG_DSN every test that asks for the server fails; it never
//     skips, and there is no in-process fallback.
//   - The server is stock (max_prepared_transactions = 0): the connector must
//     work on a stock PostgreSQL server.
//
// Every database made by [DB] has a unique name, starts empty and is dropped
// when the test ends. [Restart] restarts the server mid-test through
// scripts/postgres (PG_CTL_SCRIPT, exported by scripts/test).
package pgtest
