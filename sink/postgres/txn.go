package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
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

	buf      []byte      // binary COPY rows not yet handed to COPY
	bufRows  int         // how many rows buf holds
	origins  []origin    // where each row's record came from, in COPY order
	chunks   chan []byte // to the COPY goroutine; closed at pre-commit
	free     chan []byte // chunks the COPY goroutine has read, for reuse
	copyDone chan struct{}
	copyErr  error // valid once copyDone is closed
	broken   bool  // the writer's goroutine's view; see brokenAt

	// Set at seal, read by Commit.
	mu       sync.Mutex
	id       checkpoint.ID
	seal     spoolSeal
	brokenAt error // why the database no longer holds the rows (nil: it does)
}

// startCopy runs a binary COPY into table in the background, fed by
// t.chunks: rows the writer encoded (rowEncoder), so the COPY goroutine
// only copies bytes to the connection.
func (t *txn) startCopy(ctx context.Context, table pgx.Identifier, columns []string, free chan []byte) {
	t.chunks = make(chan []byte, 2)
	t.free = free
	t.copyDone = make(chan struct{})
	select {
	case b := <-free:
		t.buf = b[:0]
	default:
	}
	t.buf = append(t.buf[:0], copyHeader...)
	cols := make([]string, len(columns))
	for i, c := range columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	sql := "COPY " + table.Sanitize() + " (" + strings.Join(cols, ", ") + ") FROM STDIN BINARY"
	src := &chunkReader{chunks: t.chunks, free: t.free}
	go func() {
		defer close(t.copyDone)
		// On a failure CopyFrom returns once its reader, which may be
		// waiting in src for the next chunk, gets one or the close.
		_, t.copyErr = t.conn.PgConn().CopyFrom(ctx, src, sql)
	}()
}

// send hands the encoded rows to COPY; a transaction whose COPY failed
// keeps only its spool.
func (t *txn) send() {
	if t.bufRows == 0 {
		return
	}
	t.flush()
}

func (t *txn) flush() {
	if !t.broken && t.chunks != nil {
		select {
		case t.chunks <- t.buf:
			select {
			case b := <-t.free:
				t.buf = b[:0]
			default:
				t.buf = make([]byte, 0, cap(t.buf))
			}
		case <-t.copyDone:
			t.broken = true
		}
	}
	t.buf = t.buf[:0]
	t.bufRows = 0
}

// endCopy ends the stream and waits for COPY to finish; its error, if
// any, breaks the transaction.
func (t *txn) endCopy() error {
	if t.chunks == nil {
		return nil
	}
	t.buf = append(t.buf, copyTrailer...)
	t.flush()
	close(t.chunks)
	<-t.copyDone
	return t.copyErr
}

// chunkReader is the COPY stream: the chunks in order, each given back
// (free) once read.
type chunkReader struct {
	chunks <-chan []byte
	free   chan<- []byte
	cur    []byte
	off    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for r.off >= len(r.cur) {
		if r.cur != nil {
			select {
			case r.free <- r.cur[:0]:
			default:
			}
			r.cur = nil
		}
		b, ok := <-r.chunks
		if !ok {
			return 0, io.EOF
		}
		r.cur, r.off = b, 0
	}
	n := copy(p, r.cur[r.off:])
	r.off += n
	return n, nil
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
