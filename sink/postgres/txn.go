package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/connector-dev/connector/checkpoint"
)

// txn is one database transaction of a writer: rows streamed by COPY on
// its slot's connection from the first Write after a pre-commit to the
// next pre-commit, then held open until its checkpoint completes, and the
// spool file that keeps its records until then.
//
// If the connection fails at any point (the database restarts, the
// connection is killed), the transaction is "broken": the writer goes on
// spooling, and Commit writes the spool into a new transaction. A broken
// transaction needs no connection at all.
type txn struct {
	slot  int
	conn  *pgx.Conn // nil when broken before it began
	spool *spoolWriter
	began time.Time

	batch    [][]any      // rows not yet handed to COPY
	origins  []origin     // where each row's record came from, in COPY order
	rows     chan [][]any // to the COPY goroutine; closed at pre-commit
	copyDone chan struct{}
	copyErr  error // valid once copyDone is closed
	broken   bool  // the writer's goroutine's view; see brokenAt

	// Set at seal, read by Commit.
	mu       sync.Mutex
	id       checkpoint.ID
	seal     spoolSeal
	brokenAt error // why the database no longer holds the rows (nil: it does)
}

// startCopy runs COPY into table in the background, fed by t.rows.
func (t *txn) startCopy(ctx context.Context, table pgx.Identifier, columns []string) {
	t.rows = make(chan [][]any, 2)
	t.copyDone = make(chan struct{})
	var cur [][]any
	i := -1
	src := pgx.CopyFromFunc(func() ([]any, error) {
		for i+1 >= len(cur) {
			b, ok := <-t.rows
			if !ok {
				return nil, nil
			}
			cur, i = b, -1
		}
		i++
		return cur[i], nil
	})
	go func() {
		defer close(t.copyDone)
		// On a failure CopyFrom returns once its reader, which may be
		// waiting in src for the next batch, gets one or the close.
		_, t.copyErr = t.conn.CopyFrom(ctx, table, columns, src)
	}()
}

// send hands the batch to COPY; a transaction whose COPY failed keeps only
// its spool.
func (t *txn) send() {
	if len(t.batch) == 0 {
		return
	}
	if !t.broken {
		select {
		case t.rows <- t.batch:
		case <-t.copyDone:
			t.broken = true
		}
	}
	t.batch = nil
}

// endCopy closes the stream and waits for COPY to finish; its error, if
// any, breaks the transaction.
func (t *txn) endCopy() error {
	if t.rows == nil {
		return nil
	}
	t.send()
	close(t.rows)
	<-t.copyDone
	return t.copyErr
}

func (t *txn) setBroken(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.brokenAt == nil {
		t.brokenAt = err
	}
}

func (t *txn) isBroken() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.brokenAt != nil
}

// origin is where a row's record came from, to name it when the table
// refuses the row.
type origin struct {
	topic     string
	partition int32
	offset    int64
}

var copyLine = regexp.MustCompile(`COPY [^,]+, line (\d+)`)

// refused names the record of the row a COPY error points at, if any.
func (t *txn) refused(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	m := copyLine.FindStringSubmatch(pe.Where)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1 || n > len(t.origins) {
		return ""
	}
	o := t.origins[n-1]
	return fmt.Sprintf(" (the record at %s/%d offset %d)", o.topic, o.partition, o.offset)
}
