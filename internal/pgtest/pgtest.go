package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// EnvDSN is the environment variable naming the server: a DSN of a
	// superuser (it creates and drops databases).
	EnvDSN = "PG_DSN"
	// EnvCtlScript is the environment variable naming scripts/postgres, which
	// [Restart] runs. Unset, Restart uses scripts/postgres of the module the
	// test runs in.
	EnvCtlScript = "PG_CTL_SCRIPT"
)

// howToStart is appended to every "no server" failure.
const howToStart = `run the tests through scripts/test, which starts one, or by hand: eval "$(scripts/postgres start)"; export PG_DSN`

// DSN returns the server's DSN from PG_DSN. It fails the test (never skips)
// when PG_DSN is unset or the server does not answer.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := strings.TrimSpace(os.Getenv(EnvDSN))
	if dsn == "" {
		t.Fatalf("pgtest: this test needs PostgreSQL and %s is not set: %s", EnvDSN, howToStart)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn := connect(ctx, t, dsn)
	defer conn.Close(context.Background())
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("pgtest: PostgreSQL at %s does not answer: %v (%s)", describe(dsn), err, howToStart)
	}
	return dsn
}

// Connect opens a connection to dsn, closed when the test ends.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn := connect(ctx, t, dsn)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func connect(ctx context.Context, t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// The error of ParseConfig does not repeat the DSN (or its password).
		t.Fatalf("pgtest: bad DSN: %v", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connect to PostgreSQL at %s: %v", describe(dsn), err)
	}
	return conn
}

// DB creates a fresh, empty database with a unique name (from template0) on
// the server of PG_DSN, drops it when the test ends (WITH (FORCE): even if
// connections to it are still open), and returns a DSN for it: PG_DSN with
// the database replaced.
func DB(t testing.TB) string {
	t.Helper()
	admin := DSN(t)
	name := dbName(t.Name())
	ident := pgx.Identifier{name}.Sanitize()
	Exec(t, admin, "CREATE DATABASE "+ident+" TEMPLATE template0")
	t.Cleanup(func() {
		// A fresh connection: the test may have restarted the server.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		for {
			var conn *pgx.Conn
			if conn, err = pgx.Connect(ctx, admin); err == nil {
				_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
				_ = conn.Close(context.Background())
				if err == nil {
					return
				}
			}
			select {
			case <-ctx.Done():
				t.Errorf("pgtest: drop database %s: %v", name, err)
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Exec runs sql with args on dsn (on a connection of its own) and fails the
// test on error.
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connect(ctx, t, dsn)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// QueryInt runs sql with args on dsn (on a connection of its own) and returns
// the single integer it selects; it fails the test on error, on no row, and
// on NULL.
func QueryInt(t testing.TB, dsn, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connect(ctx, t, dsn)
	defer conn.Close(context.Background())
	var n *int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
	if n == nil {
		t.Fatalf("pgtest: %s: NULL", sql)
	}
	return *n
}

// QueryString runs a query returning one text value.
func QueryString(t testing.TB, dsn, sql string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connect(ctx, t, dsn)
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
	return s
}

// Restart restarts the server of PG_DSN (scripts/postgres restart: pg_ctl
// restart -m fast) and returns once it answers again. What committed before
// survives; every open connection breaks.
//
// It restarts the whole server: the connections of every test running at that
// moment break, in every package (go test runs packages in parallel). A test
// that calls it must not be parallel, and tests of other packages that use
// the server at the same time must tolerate a restart.
//
// It fails the test when PG_DSN does not name the server that scripts/postgres
// runs (it would restart another one).
func Restart(t testing.TB) {
	t.Helper()
	dsn := DSN(t)
	script := ctlScript(t)

	// The server of PG_DSN must be the one the script runs.
	out, errOut, err := run(script, "status")
	if err != nil {
		t.Fatalf("pgtest: %s status: %v: %s (Restart needs the server started by scripts/postgres)", script, err, errOut)
	}
	scriptDSN := envLine(out, EnvDSN)
	if scriptDSN == "" {
		t.Fatalf("pgtest: %s status printed no %s line: %s", script, EnvDSN, out)
	}
	// The same cluster: the same system identifier (unique to each initdb).
	const sysidSQL = "select system_identifier from pg_control_system()"
	if a, b := QueryInt(t, dsn, sysidSQL), QueryInt(t, scriptDSN, sysidSQL); a != b {
		t.Fatalf("pgtest: %s names the server at %s but %s runs another one, at %s: Restart would restart that one",
			EnvDSN, describe(dsn), script, describe(scriptDSN))
	}

	begun := time.Now()
	if _, errOut, err = run(script, "restart"); err != nil {
		t.Fatalf("pgtest: %s restart: %v: %s", script, err, errOut)
	}
	// The script waits until the server answers; make sure this DSN does.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(context.Background())
			if err == nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: PostgreSQL at %s does not answer after restart: %v", describe(dsn), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("pgtest: restarted PostgreSQL at %s in %v", describe(dsn), time.Since(begun).Round(time.Millisecond))
}

// ctlScript returns PG_CTL_SCRIPT, or else scripts/postgres of the module the
// test runs in.
func ctlScript(t testing.TB) string {
	t.Helper()
	if s := os.Getenv(EnvCtlScript); s != "" {
		return s
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "scripts", "postgres")
			if _, err := os.Stat(s); err != nil {
				t.Fatalf("pgtest: %s is not set and %v", EnvCtlScript, err)
			}
			return s
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("pgtest: %s is not set and no go.mod above the test's directory: set it to scripts/postgres", EnvCtlScript)
		}
		dir = parent
	}
}

func run(script string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), strings.TrimSpace(e.String()), err
}

// envLine returns the value of the NAME=value line of out.
func envLine(out, name string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"="); ok {
			return v
		}
	}
	return ""
}

// describe names dsn's server and database for messages, without its password.
func describe(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s/%s (user %s)", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database, cfg.User)
}

// withDatabase returns dsn with its database replaced by name. name is made
// of [a-z0-9_] only (see dbName).
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("bad %s URL", EnvDSN) // url's error would show the password
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	// keyword=value: the last dbname wins.
	return dsn + " dbname=" + name, nil
}

// dbName makes a unique database name from a test name: a lowercase
// [a-z0-9_] prefix from the test's name and 48 random bits, at most 55 bytes
// (PostgreSQL's limit is 63).
func dbName(testName string) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String()
}
