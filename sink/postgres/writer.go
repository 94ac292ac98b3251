package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// writer is one worker's output: a transaction open from its first record
// after a pre-commit to the next pre-commit, then held until its checkpoint
// completes (the sink commits it) while the next one fills. Each
// transaction takes a free slot, whose connection it uses.
type writer struct {
	s     *Sink
	index int
	enc   *rowEncoder
	row   []byte // a row encoded before its transaction begins

	// Reused from transaction to transaction, so a checkpoint's rows do
	// not cost fresh allocations: the origins slice of a pre-committed
	// one (given back by its finish, which may run on another goroutine)
	// and COPY's chunks (given back by the COPY goroutines once read).
	spareOrigins chan []origin
	freeChunks   chan []byte

	cur *txn // owned by the writer's goroutine

	mu      sync.Mutex // slots and carried are read by Committed and Stats
	conns   []*pgx.Conn
	busy    []*txn // by slot: the transaction holding it
	carried []sink.Committable
	seq     int
}

var (
	_ sink.Writer            = (*writer)(nil)
	_ sink.AsyncPreCommitter = (*writer)(nil)
)

func newWriter(s *Sink, index int) *writer {
	return &writer{s: s, index: index, enc: newRowEncoder(s.plan),
		spareOrigins: make(chan []origin, 1), freeChunks: make(chan []byte, 4),
		conns: make([]*pgx.Conn, s.slots), busy: make([]*txn, s.slots)}
}

// Write converts r to a row (ErrBadRecord if a field does not fit its
// column), spools its value and hands the row to COPY in batches.
func (w *writer) Write(ctx context.Context, r *record.Record) error {
	t := w.cur
	var err error
	mark := 0 // where the row starts in t.buf
	if t == nil {
		// A bad record opens no transaction: encode it first.
		if w.row, err = w.enc.appendRow(w.row[:0], r); err != nil {
			return err
		}
		if t, err = w.begin(ctx); err != nil {
			return err
		}
		mark = len(t.buf)
		t.buf = append(t.buf, w.row...)
	} else {
		mark = len(t.buf)
		if t.buf, err = w.enc.appendRow(t.buf, r); err != nil {
			return err
		}
	}
	if err := t.spool.append(r.Value); err != nil {
		t.buf = t.buf[:mark]
		return fmt.Errorf("%w: postgres sink writer %d: %w", sink.ErrLost, w.index, err)
	}
	w.s.written.rows.Add(1)
	w.s.written.bytes.Add(uint64(len(r.Value)))
	t.bufRows++
	t.origins = append(t.origins, origin{r.Topic, r.Partition, r.Offset})
	if t.bufRows >= w.s.cfg.BatchSize {
		t.send()
	}
	return nil
}

// rowOf converts r's fields to the columns' values, for pgx's CopyFrom (the
// rows written again from a spool).
func rowOf(fields *transform.FieldsReader, p *plan, r *record.Record) ([]any, error) {
	raws, err := fields.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sink.ErrBadRecord, err)
	}
	row := make([]any, len(p.columns))
	for i, c := range p.columns {
		raw := raws[i]
		if raw == nil || string(raw) == "null" {
			if c.notNull {
				return nil, fmt.Errorf("%w: column %s is NOT NULL and field %s is absent or null", sink.ErrBadRecord, c.name, c.field)
			}
			continue
		}
		if row[i], err = c.conv(raw); err != nil {
			return nil, fmt.Errorf("%w: column %s (%s), field %s: %w", sink.ErrBadRecord, c.name, c.typ, c.field, err)
		}
	}
	return row, nil
}

// begin opens a transaction in a free slot. Its spool file always opens;
// the database transaction only if the slot's connection works: otherwise
// the transaction starts broken (spool only) and Commit writes it.
func (w *writer) begin(ctx context.Context) (*txn, error) {
	w.mu.Lock()
	slot := slices.Index(w.busy, nil)
	w.seq++
	seq := w.seq
	w.mu.Unlock()
	if slot < 0 {
		return nil, fmt.Errorf("%w: postgres sink writer %d: all %d transactions are pending (more failed checkpoints in a row than checkpoint.tolerable_failures?)", sink.ErrLost, w.index, len(w.busy))
	}
	name := "w" + strconv.Itoa(w.index) + "-" + w.s.owner + "-" + strconv.Itoa(seq) + ".spool"
	sp, err := createSpool(w.s.fs, w.s.spoolDir, name)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres sink writer %d: %w", sink.ErrLost, w.index, err)
	}
	t := &txn{slot: slot, spool: sp, began: time.Now()}
	select {
	case t.origins = <-w.spareOrigins:
	default:
	}
	if conn, err := w.connect(ctx, slot); err != nil {
		t.broken = true
		t.setBroken(err)
	} else if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		w.dropConn(slot)
		t.broken = true
		t.setBroken(err)
	} else {
		t.conn = conn
		target := w.s.plan.table
		if w.s.cfg.Mode == ModeUpsert {
			target = stageTable
		}
		t.startCopy(w.s.ctx, target, w.s.plan.columnNames(), w.freeChunks)
	}
	w.mu.Lock()
	w.busy[slot] = t
	w.mu.Unlock()
	w.cur = t
	return t, nil
}

// connect returns the slot's connection, opening it if needed. While the
// database is down it fails fast (the sink remembers the last failure
// for a few seconds), so that Write goes on spooling.
func (w *writer) connect(ctx context.Context, slot int) (*pgx.Conn, error) {
	w.mu.Lock()
	conn := w.conns[slot]
	w.mu.Unlock()
	if conn != nil && !conn.IsClosed() {
		if conn.PgConn().TxStatus() == 'I' {
			return conn, nil
		}
		// A transaction still open on it (a BEGIN there would only warn,
		// and the next checkpoint's rows would join it): a new connection.
		w.dropConn(slot)
	}
	conn, err := w.s.dial(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.conns[slot] = conn
	w.mu.Unlock()
	return conn, nil
}

func (w *writer) dropConn(slot int) {
	w.mu.Lock()
	conn := w.conns[slot]
	w.conns[slot] = nil
	w.mu.Unlock()
	if conn != nil {
		closeConn(conn)
	}
}

// PreCommit is PreCommitAsync with its finish run at once.
func (w *writer) PreCommit(ctx context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	finish, err := w.PreCommitAsync(ctx, id)
	if err != nil {
		return nil, err
	}
	return finish()
}

// PreCommitAsync closes off the open transaction: later records go to a
// new one. finish ends its COPY, makes its spool durable and hands it to
// the sink to commit, still open. A COPY that failed (the database went
// away) loses nothing: the transaction is broken and Commit writes the
// spool. Only a spool that cannot be made durable loses the records
// (ErrLost: the task fails and the restart reads them again).
func (w *writer) PreCommitAsync(ctx context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	t := w.cur
	w.cur = nil
	if t == nil {
		return func() ([]sink.Committable, error) { return w.carriedCopy(), nil }, nil
	}
	t.send()
	return func() ([]sink.Committable, error) {
		err := t.endCopy()
		if err == nil {
			refused, cerr := t.checkStaged(ctx, w.s.plan)
			if refused != "" {
				w.dropConn(t.slot)
				w.release(t)
				t.spool.abandon()
				return nil, fmt.Errorf("%w: postgres sink writer %d, checkpoint %d: the table refused a row: %s", sink.ErrLost, w.index, id, refused)
			}
			if cerr != nil {
				// Not a refusal (the connection failed, the stop): the
				// transaction is given up as one the database lost, and
				// Commit writes the spool again (the merge checks it).
				err = fmt.Errorf("%w: %w", errUnreachable, cerr)
			}
		}
		if err != nil {
			w.dropConn(t.slot)
			if !errors.Is(unreachable(err), errUnreachable) {
				// The table refused a row (a constraint, a value the
				// sink could not check): writing the spool again would
				// be refused too. Decline, and fail the task: the
				// restart reads the records again and meets the same
				// row, so the job stops on it, naming it.
				w.release(t)
				t.spool.abandon()
				return nil, fmt.Errorf("%w: postgres sink writer %d, checkpoint %d: the table refused a row%s: %w",
					sink.ErrLost, w.index, id, t.refused(err), rowsErr(err, "COPY"))
			}
			t.setBroken(err)
			w.s.log.Warn().Err(err).Int("writer", w.index).Uint64("checkpoint", uint64(id)).
				Msg("postgres sink: the database lost a transaction before its checkpoint; its rows are written again from the spool at commit")
		}
		select {
		case w.spareOrigins <- t.origins[:0]:
		default:
		}
		t.origins = nil
		seal, err := t.spool.finish()
		if err != nil {
			w.release(t)
			return nil, fmt.Errorf("%w: postgres sink writer %d, checkpoint %d: %w", sink.ErrLost, w.index, id, err)
		}
		t.mu.Lock()
		t.id, t.seal = id, seal
		t.mu.Unlock()
		c, err := encodeCommittable(id, w.index, seal)
		if err != nil {
			return nil, err
		}
		w.s.hold(c, t)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.carried = append(w.carried, c)
		return slices.Clone(w.carried), nil
	}, nil
}

func (w *writer) carriedCopy() []sink.Committable {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.carried)
}

// Committed frees the slots of the transactions of checkpoints <= id (the
// sink committed them).
func (w *writer) Committed(id checkpoint.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint <= id })
	for slot, t := range w.busy {
		if t == nil {
			continue // the transaction filling has no id until its pre-commit ends: never done here
		}
		t.mu.Lock()
		done := t.id != 0 && t.id <= id
		t.mu.Unlock()
		if done {
			w.busy[slot] = nil
		}
	}
}

// release frees t's slot after a failure; its connection is dropped (a
// transaction may be open on it).
func (w *writer) release(t *txn) {
	w.dropConn(t.slot)
	w.mu.Lock()
	w.busy[t.slot] = nil
	w.mu.Unlock()
}

// Close rolls back the writer's transactions by closing its connections
// (the one filling and those pre-committed for checkpoints that did not
// complete: a restart restores a completed checkpoint and writes what it
// needs again from the spool) and deletes the spool of the one filling.
func (w *writer) Close() error {
	if t := w.cur; t != nil {
		w.cur = nil
		if t.chunks != nil {
			t.buf, t.bufRows = t.buf[:0], 0
			_ = t.endCopy()
		}
		t.spool.abandon()
	}
	w.mu.Lock()
	conns := w.conns
	w.conns = make([]*pgx.Conn, len(conns))
	w.busy = make([]*txn, len(w.busy))
	w.mu.Unlock()
	for _, conn := range conns {
		if conn != nil {
			closeConn(conn)
		}
	}
	w.s.forget(w.index)
	return nil
}

// closeConn closes conn at once: an open transaction on it is rolled back
// by the server when the connection ends.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := conn.Close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = conn.PgConn().Conn().Close()
	}
}
