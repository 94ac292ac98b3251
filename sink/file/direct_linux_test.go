package file

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// diskDir is a temporary directory on a disk's file system (not tmpfs),
// where direct I/O and the page cache behave as in production.
func diskDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if onTmpfs(t, dir) {
		t.Fatalf("%s is on tmpfs: this test needs a disk's file system (set TMPDIR)", dir)
	}
	return dir
}

// TestDirectPartsHoldExactlyTheirBytesAcrossPreCommitsAndARestart: a part
// written with direct I/O, pre-committed at unaligned lengths (its partial
// last block written through the page cache, then again, whole, by the
// next direct write), holds at each pre-commit exactly the bytes written so
// far at the length it records. A crash after checkpoint 3 (checkpoint 4
// pre-committed, never committed) resumes that file, cut back, buffered,
// and every record is visible exactly once.
func TestDirectPartsHoldExactlyTheirBytesAcrossPreCommitsAndARestart(t *testing.T) {
	dir := diskDir(t)
	cfg := Config{Path: dir, Job: "orders", RollSize: 1 << 30, Writers: 1}
	s, err := New(cfg, vfs.Default, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s, 0)
	var want []byte // the open part's bytes so far
	var restored []sink.Committable
	// Rounds of 1, 3 and thousands of records (~41 bytes each): tails in
	// the same block as the last pre-commit's, and ~2.4 and ~1.6 MiB, past
	// directChunk: chunks in flight while the writer goes on.
	rounds := []int{1, 3, 60001, 0, 2999, 7, 41000}
	from := 0
	for i, n := range rounds {
		id := checkpoint.ID(i + 1)
		writeRange(t, w, from, from+n)
		for j := from; j < from+n; j++ {
			want = append(append(want, value(j)...), '\n')
		}
		from += n
		cs := preCommit(t, w, id)
		p := w.(*fileWriter).open[""]
		if p == nil || !p.direct {
			t.Fatalf("checkpoint %d: the open part is not written with direct I/O", id)
		}
		got, err := os.ReadFile(filepath.Join(dir, p.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || p.off != int64(len(want)) {
			t.Fatalf("checkpoint %d: the part holds %d bytes (records %d), want %d; equal prefix: %d bytes",
				id, len(got), p.off, len(want), commonPrefix(got, want))
		}
		commit(t, s, cs)
		w.Committed(id)
		if id == 3 {
			restored = cs
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := New(cfg, vfs.Default, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := newTestWriter(t, s2, 0)
	resumedFrom := rounds[0] + rounds[1] + rounds[2]
	writeRange(t, r, resumedFrom, resumedFrom+5000)
	r.(sink.InputEnder).EndInput()
	commit(t, s2, preCommit(t, r, 4))

	requireOnePartHolding(t, dir, resumedFrom+5000)
}

// TestAFailedDirectWriteIsWrittenAgain: direct writes that fail (in flight
// while the writer goes on, or at the pre-commit) decline the pre-commit
// with ErrNotDurable; with the disk healthy again the next one writes
// every byte once, still with direct I/O.
func TestAFailedDirectWriteIsWrittenAgain(t *testing.T) {
	dir := diskDir(t)
	f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpFileWriteAt: true}, path: inProgressPrefix, err: errorfs.ErrInjected}
	s, err := New(Config{Path: dir, Job: "orders", RollSize: 1 << 30}, errorfs.Wrap(vfs.Default, f), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s, 0)
	const n = 40000 // ~1.6 MiB (past directChunk): each phase sends a chunk at least
	writeRange(t, w, 0, n)
	f.on.Store(true)
	writeRange(t, w, n, 2*n)
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("PreCommit(1) = %v, want ErrNotDurable wrapping the injected error", err)
	}
	f.on.Store(false)
	writeRange(t, w, 2*n, 3*n)
	if p := w.(*fileWriter).open[""]; p == nil || !p.direct {
		t.Fatal("the open part is not written with direct I/O after the failures")
	}
	w.(sink.InputEnder).EndInput()
	commit(t, s, preCommit(t, w, 2))
	requireOnePartHolding(t, dir, 3*n)
}

// requireOnePartHolding checks that dir holds one visible part, with the
// lines of records 0..n-1, once each, in order.
func requireOnePartHolding(t *testing.T, dir string, n int) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(names) != 1 {
		t.Fatalf("visible parts: %v (%v), want one", names, err)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	var want [][]byte
	for j := range n {
		want = append(want, value(j))
	}
	if !slices.EqualFunc(lines, want, bytes.Equal) {
		t.Fatalf("the part holds %d lines (%d bytes), want records 0..%d once each, in order", len(lines), len(b), n-1)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestNewDirectPartsReuseTheBuffersOfFinishedOnes: a part rolled by size
// hands its buffers to the next part, which moves to one at its first
// write instead of growing its own by appends to a chunk (7.6 MB
// allocated, zeroed and copied per part before: 3-4% of the 1 KB drain's
// CPU).
func TestNewDirectPartsReuseTheBuffersOfFinishedOnes(t *testing.T) {
	dir := diskDir(t)
	const parts = 8
	cfg := Config{Path: dir, Job: "orders", RollSize: 3 << 20, Writers: 1}
	s, err := New(cfg, vfs.Default, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s, 0)
	r := &record.Record{Topic: "orders", Value: []byte(`{"pad":"` + strings.Repeat("x", 990) + `"}`)}
	perPart := int(cfg.RollSize) / (len(r.Value) + 1)
	write := func(n int) {
		for range n {
			r.Offset++
			if err := w.Write(ctx, r); err != nil {
				t.Fatalf("Write(%d): %v", r.Offset, err)
			}
		}
	}
	write(perPart + 1) // the first part, rolled, and the second's first record
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	write((parts - 1) * perPart)
	runtime.ReadMemStats(&after)
	fw := w.(*fileWriter)
	if len(fw.parts) < parts-1 {
		t.Fatalf("%d parts rolled, want at least %d", len(fw.parts), parts-1)
	}
	for _, p := range fw.parts {
		if !p.direct {
			t.Fatalf("part %s was not written with direct I/O", p.name)
		}
	}
	// Each part still grows from nothing to fileBufferSize before its
	// first write (about 1.3 MB with Go's growth steps).
	perPartAlloc := (after.TotalAlloc - before.TotalAlloc) / (parts - 1)
	if perPartAlloc > 2<<20 {
		t.Fatalf("%d bytes allocated per part, want at most 2 MiB: new parts do not take finished parts' buffers", perPartAlloc)
	}
	if p := fw.open[""]; p == nil || cap(p.buf) != directBufferCap || !isAligned(p.buf) {
		t.Fatalf("the open part's buffer is not an aligned buffer of directBufferCap")
	}
}
