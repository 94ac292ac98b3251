package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// visibleBytes is the total size of the committed output under dir: every
// regular file whose name starts with neither '.' nor '_' (the connector's
// and Flink's in-progress and pending files do), in dir and below.
func visibleBytes(dir string) (int64, int, error) {
	var total int64
	var files int
	err := walkVisible(dir, func(path string, d os.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) { // renamed or removed meanwhile
				return nil
			}
			return err
		}
		total += info.Size()
		files++
		return nil
	})
	return total, files, err
}

// verification is what the committed output holds, against the load.
type verification struct {
	Lines      int64 `json:"lines"`
	Distinct   int64 `json:"distinct"`   // distinct record ids
	Duplicates int64 `json:"duplicates"` // lines whose id came before
	Missing    int64 `json:"missing"`    // ids 0..n-1 to keep never seen
	Dropped    int64 `json:"dropped"`    // lines of ids the dedup should have dropped (repeats)
	Malformed  int64 `json:"malformed"`  // lines that are no record of the load
	Files      int   `json:"files"`
}

// ExactlyOnce says the output holds the n records to keep, each once, and
// nothing else.
func (v verification) ExactlyOnce(n int64) bool {
	return v.Lines == n && v.Distinct == n && v.Duplicates == 0 && v.Missing == 0 && v.Malformed == 0 && v.Dropped == 0
}

func (v verification) String() string {
	return fmt.Sprintf("%d lines, %d distinct, %d duplicates, %d missing, %d malformed, %d to drop, %d files",
		v.Lines, v.Distinct, v.Duplicates, v.Missing, v.Malformed, v.Dropped, v.Files)
}

// verify reads every committed line under dir and checks that the want ids
// of 0..n-1 that keep says are kept each appear exactly once, and the others
// not. Lines are bench/cmd/load's values: the id's ten digits start at
// byte 8 ({"id":"r0000000042",...).
func verify(dir string, n, want int64, keep func(id int64) bool) (verification, error) {
	var v verification
	seen := make([]uint64, (n+63)/64)
	err := walkVisible(dir, func(path string, d os.DirEntry) error {
		v.Files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				// a line longer than the buffer: no record of the load
				v.Malformed++
				for err == bufio.ErrBufferFull {
					_, err = r.ReadSlice('\n')
				}
				continue
			}
			if len(line) > 0 {
				v.Lines++
				id, ok := lineID(line)
				switch {
				case !ok || id >= n:
					v.Malformed++
				case !keep(id):
					v.Dropped++
				case seen[id/64]&(1<<(id%64)) != 0:
					v.Duplicates++
				default:
					seen[id/64] |= 1 << (id % 64)
					v.Distinct++
				}
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	v.Missing = want - v.Distinct
	return v, err
}

var idPrefix = []byte(`{"id":"r`)

func lineID(line []byte) (int64, bool) {
	if !bytes.HasPrefix(line, idPrefix) || len(line) < len(idPrefix)+10 {
		return 0, false
	}
	id, err := strconv.ParseInt(string(line[len(idPrefix):len(idPrefix)+10]), 10, 64)
	return id, err == nil
}

// walkVisible calls fn for every committed (visible) regular file under dir:
// names starting with '.' or '_' are in-progress or pending files, and hidden
// directories are skipped whole. Files that vanish during the walk (renamed
// by a commit) are passed over.
func walkVisible(dir string, fn func(path string, d os.DirEntry) error) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		name := d.Name()
		if path != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(path, d)
	})
}
