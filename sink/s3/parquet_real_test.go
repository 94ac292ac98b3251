package s3

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/parquetfile"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// readWithPyarrow is run by scripts/pyarrow: for each file, its rows, row
// groups, ids, the first 16 characters of each pad and the pads' lengths.
const readWithPyarrow = `
import json, sys
import pyarrow.parquet as pq
for path in sys.argv[1:]:
    f = pq.ParquetFile(path)
    t = f.read()
    pads = t.column("pad").to_pylist()
    print(json.dumps({
        "rows": t.num_rows, "metadata_rows": f.metadata.num_rows, "row_groups": f.num_row_groups,
        "ids": t.column("id").to_pylist(), "pad_heads": [p[:16] for p in pads],
        "pad_lens": sorted(set(len(p) for p in pads)),
    }))
`

type pyarrowRead struct {
	Rows         int      `json:"rows"`
	MetadataRows int      `json:"metadata_rows"`
	RowGroups    int      `json:"row_groups"`
	IDs          []int64  `json:"ids"`
	PadHeads     []string `json:"pad_heads"`
	PadLens      []int    `json:"pad_lens"`
}

// pyarrowRead reads files with Apache Arrow's reader (scripts/pyarrow,
// which installs pyarrow on first use); a failure to set it up fails the
// test.
func readPyarrow(t *testing.T, paths []string) []pyarrowRead {
	t.Helper()
	script, err := filepath.Abs("../../scripts/pyarrow")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, append([]string{"python", "-c", readWithPyarrow}, paths...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyarrow could not read the objects (scripts/pyarrow must be able to set pyarrow up): %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	out := make([]pyarrowRead, len(paths))
	for i := range paths {
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("pyarrow's output for %s: %v\n%s", paths[i], err, stderr.String())
		}
	}
	return out
}

// The crash and resume cycle on the real server with format: parquet and
// 5 MiB parts: checkpoint 2 records the open object's part, delta and two
// row groups; after a crash past the pre-commit of 4 (an object rolled,
// another begun), Recover resumes the object from 2, the replayed records
// follow, and the completed objects, downloaded, are read by pyarrow:
// every id once, with its own pad, and a row group per checkpoint.
func TestRealS3ParquetCrashAfterPreCommitThenResumeIsReadByPyarrow(t *testing.T) {
	const pad = 1000
	e := newRealEnv(t)
	pq := func(c *Config) {
		c.Format = filefmt.Parquet
		c.Parquet = filefmt.ParquetConfig{Columns: parquetCols, Compression: parquetfile.CompressionNone, RowGroupSize: 32 * config.MiB}
		c.RollSize = 12 * config.MiB
	}
	s := e.sink(pq)
	w := newTestWriter(t, s, 0)
	writePQ(t, w, 0, 6000, pad) // a row group of more than 5 MiB: part 1
	checkpointed(t, s, w, 1)
	writePQ(t, w, 6000, 8000, pad) // a smaller one: a delta
	restored := preCommit(t, w, 2)
	o := decodeAll(t, restored)[0].Open
	if o == nil || len(o.Parts) != 1 || len(o.Tail) == 0 || o.Format == nil || len(o.Format.Parquet.RowGroups) != 2 {
		t.Fatalf("checkpoint 2 should record an open object with a part, a tail and 2 row groups: %+v", o)
	}
	writePQ(t, w, 8000, 14000, pad)
	preCommit(t, w, 3)               // a row group past roll_size; never completes
	writePQ(t, w, 14000, 20000, pad) // the object rolls at the first, the next one begins
	cs := preCommit(t, w, 4)         // never completes
	if d := decodeAll(t, cs); len(d[len(d)-1].Complete) != 1 || d[len(d)-1].Open == nil {
		t.Fatalf("checkpoint 4 should record a rolled object and an open one: %+v", d)
	}
	writePQ(t, w, 20000, 21000, pad)
	_ = w.Close() // the crash

	s2 := e.sink(pq)
	if err := s2.Recover(e.ctx(), restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w2 := newTestWriter(t, s2, 0)
	writePQ(t, w2, 8000, 14000, pad)
	checkpointed(t, s2, w2, 3)
	writePQ(t, w2, 14000, 21000, pad) // the object rolls (by the bytes of its row groups) at the first
	w2.EndInput()
	checkpointed(t, s2, w2, 4)
	_ = w2.Close()
	e.assertClean()

	keys := e.keys("out/" + jobDir)
	if len(keys) != 2 || keys[0] != o.Key {
		t.Fatalf("objects %v, want the resumed %s and one more", keys, o.Key)
	}
	dir := t.TempDir()
	var paths []string
	for i, k := range keys {
		p := filepath.Join(dir, filepath.Base(k))
		if err := os.WriteFile(p, e.get(k), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		if _, groups := readParquet(t, k, e.get(k), pad); groups != []int{3, 1}[i] {
			t.Errorf("%s has %d row groups (parquet-go)", k, groups)
		}
	}
	got := map[int64]int{}
	for i, r := range readPyarrow(t, paths) {
		if r.Rows != len(r.IDs) || r.MetadataRows != r.Rows || len(r.PadHeads) != r.Rows {
			t.Fatalf("%s: pyarrow read %d rows, %d ids, %d pads; the footer says %d", keys[i], r.Rows, len(r.IDs), len(r.PadHeads), r.MetadataRows)
		}
		if want := []int{3, 1}[i]; r.RowGroups != want {
			t.Errorf("%s: %d row groups, want %d (checkpoints 1, 2 and 3; the end)", keys[i], r.RowGroups, want)
		}
		if len(r.PadLens) != 1 || r.PadLens[0] != pad {
			t.Errorf("%s: pad lengths %v", keys[i], r.PadLens)
		}
		for j, id := range r.IDs {
			if r.PadHeads[j] != pqPad(int(id), 16) {
				t.Fatalf("%s: row %d (id %d) has pad %q…", keys[i], j, id, r.PadHeads[j])
			}
			got[id]++
		}
	}
	checkIDsOnce(t, got, 0, 21000)
}
