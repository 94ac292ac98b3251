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
	chunks   chan chunk  // to the COPY goroutine; closed at pre-commit
	free     chan []byte // chunks the COPY goroutine has read, for reuse
	copyDone chan struct{}
	copyErr  error // valid once copyDone is closed
	copyBase int   // rows before the COPY statement that failed; as copyErr
	broken   bool  // the writer's goroutine's view; see brokenAt

	// Set at seal, read by Commit.
	mu       sync.Mutex
	id       checkpoint.ID
	seal     spoolSeal
	brokenAt error // why the database no longer holds the rows (nil: it does)
}

// copySegment is how many bytes of rows one COPY statement takes before
// the next one starts, in the same transaction. The end of a COPY waits
// for the server to work through every row sent, so the data in flight
// (socket buffers can hold far more than a segment) is drained
// at each segment's end rather than all at the pre-commit: the pre-commit
// then waits only for the last segment. The wait at each end costs the
// server a round trip of idleness per segment.
const copySegment = 2 << 20

// chunk is encoded rows (binary COPY rows, without header or trailer).
type chunk struct {
	b    []byte
	rows int
}

// startCopy runs binary COPY statements into table in the background, fed
// by t.chunks: rows the writer encoded (rowEncoder), so the COPY goroutine
// only copies bytes to the connection.
func (t *txn) startCopy(ctx context.Context, table pgx.Identifier, columns []string, free chan []byte) {
	t.chunks = make(chan chunk, 2)
	t.free = free
	t.copyDone = make(chan struct{})
	select {
	case b := <-free:
		t.buf = b[:0]
	default:
	}
	cols := make([]string, len(columns))
	for i, c := range columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	sql := "COPY " + table.Sanitize() + " (" + strings.Join(cols, ", ") + ") FROM STDIN BINARY"
	src := &segmentReader{chunks: t.chunks, free: t.free}
	go func() {
		defer close(t.copyDone)
		for !src.closed {
			src.start()
			// On a failure CopyFrom returns once its reader, which may be
			// waiting in src for the next chunk, gets one or the close.
			if _, err := t.conn.PgConn().CopyFrom(ctx, src, sql); err != nil {
				t.copyErr, t.copyBase = err, src.base
				return
			}
		}
	}()
}

// send hands the encoded rows to COPY; a transaction whose COPY failed
// keeps only its spool.
func (t *txn) send() {
	if t.bufRows == 0 {
		return
	}
	if !t.broken && t.chunks != nil {
		select {
		case t.chunks <- chunk{t.buf, t.bufRows}:
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
	t.send()
	close(t.chunks)
	<-t.copyDone
	return t.copyErr
}

// segmentReader is the data of one COPY statement after another: a
// header, chunks until copySegment bytes or the close, a trailer; each
// chunk given back (free) once read.
type segmentReader struct {
	chunks <-chan chunk
	free   chan<- []byte
	cur    []byte
	off    int
	pre    []byte // header or trailer still to read
	bytes  int    // of rows in this segment
	base   int    // rows before this segment
	rows   int    // rows of this segment
	ending bool   // the trailer is (being) read: EOF after it
	closed bool   // chunks is closed: no segment after this one
}

func (r *segmentReader) start() {
	r.pre, r.ending = copyHeader, false
	r.base += r.rows
	r.rows, r.bytes = 0, 0
}

func (r *segmentReader) Read(p []byte) (int, error) {
	for {
		if len(r.pre) > 0 {
			n := copy(p, r.pre)
			r.pre = r.pre[n:]
			return n, nil
		}
		if r.off < len(r.cur) {
			n := copy(p, r.cur[r.off:])
			r.off += n
			return n, nil
		}
		if r.cur != nil {
			select {
			case r.free <- r.cur[:0]:
			default:
			}
			r.cur = nil
		}
		if r.ending {
			return 0, io.EOF
		}
		if r.bytes >= copySegment {
			r.pre, r.ending = copyTrailer, true
			continue
		}
		c, ok := <-r.chunks
		if !ok {
			r.pre, r.ending, r.closed = copyTrailer, true, true
			continue
		}
		r.cur, r.off = c.b, 0
		r.bytes += len(c.b)
		r.rows += c.rows
	}
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
// checkStaged tests the rows this transaction staged for upsert's merge
// against the table's checks (plan.checkSQL), after its COPY ended. A row
// one refuses is described in refused, naming its record and the
// constraint, as a COPY into the table would refuse it in insert mode.
func (t *txn) checkStaged(ctx context.Context, p *plan) (refused string, err error) {
	if p.checkSQL == "" || t.conn == nil || len(t.origins) == 0 {
		return "", nil
	}
	var n, which int
	err = t.conn.QueryRow(ctx, p.checkSQL).Scan(&n, &which)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil && (errors.Is(unreachable(err), errUnreachable) || errors.Is(err, context.Canceled) || ctx.Err() != nil):
		return "", rowsErr(err, "check the staged rows")
	case err != nil:
		// The server answered with an error: a check's expression failed
		// on a row (a division by zero), as it would in the merge.
		return fmt.Sprintf("testing the rows against the checks %s failed: %v", strings.Join(p.checkNames, ", "), rowsErr(err, "check the staged rows")), nil
	}
	refused = fmt.Sprintf("the row violates check constraint %q of %s", p.checkNames[which], p.table.Sanitize())
	if n >= 1 && n <= len(t.origins) {
		o := t.origins[n-1]
		refused += fmt.Sprintf(" (the record at %s/%d offset %d)", o.topic, o.partition, o.offset)
	}
	return refused, nil
}

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
	n += t.copyBase // the line within the COPY statement that failed
	if n < 1 || n > len(t.origins) {
		return ""
	}
	o := t.origins[n-1]
	return fmt.Sprintf(" (the record at %s/%d offset %d)", o.topic, o.partition, o.offset)
}
