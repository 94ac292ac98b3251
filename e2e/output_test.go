package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------
// Reading the visible output

// output is what the file sink shows: the committed files under sink.path.
type output struct {
	counts map[int64]int // id -> lines holding it
	lines  int
	files  int
	bad    []string // lines that are no record of ours, files torn mid-line
}

// present returns how many of the ids in [0, n) appear at least once.
func (o output) present(n int) int {
	c := 0
	for id := range o.counts {
		if id >= 0 && id < int64(n) {
			c++
		}
	}
	return c
}

// outputReader reads the visible files under a directory: every file and
// directory whose name starts with '.' or '_' is skipped (DESIGN.md: in
// progress or pending). A committed file is never rewritten, so a file seen
// before with the same size and mtime is not read again.
type outputReader struct {
	dir   string
	cache map[string]parsedFile
	// parse reads the files that are new or changed since the last read
	// (jsonl: parseFiles; Parquet: parquetFiles, with pyarrow).
	parse func(paths []string) (map[string]parsedFile, error)
}

type parsedFile struct {
	size  int64
	mtime time.Time
	ids   []int64
	bad   []string
}

func newOutputReader(dir string) *outputReader {
	return &outputReader{dir: dir, cache: map[string]parsedFile{}, parse: parseFiles}
}

// parseFiles reads jsonl files with parseFile; a file gone meanwhile is
// left out.
func parseFiles(paths []string) (map[string]parsedFile, error) {
	out := make(map[string]parsedFile, len(paths))
	for _, path := range paths {
		pf, err := parseFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		out[path] = pf
	}
	return out, nil
}

// readAll is read: a committed file is complete once visible.
func (r *outputReader) readAll() (output, error) { return r.read() }

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func (r *outputReader) read() (output, error) {
	out := output{counts: map[int64]int{}}
	infos := map[string]fs.FileInfo{}
	err := filepath.WalkDir(r.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != r.dir {
				return nil // renamed or removed while we walked
			}
			return err
		}
		if path == r.dir {
			return nil
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		infos[path] = info
		return nil
	})
	if err != nil {
		return out, err
	}
	var changed []string
	for path, info := range infos {
		if pf, ok := r.cache[path]; !ok || pf.size != info.Size() || !pf.mtime.Equal(info.ModTime()) {
			changed = append(changed, path)
		}
	}
	slices.Sort(changed)
	parsed, err := r.parse(changed)
	if err != nil {
		return out, err
	}
	for path, pf := range parsed {
		pf.size, pf.mtime = infos[path].Size(), infos[path].ModTime()
		r.cache[path] = pf
	}
	for path := range r.cache {
		if _, ok := infos[path]; !ok {
			delete(r.cache, path)
		}
	}
	for _, pf := range r.cache {
		out.files++
		out.lines += len(pf.ids)
		for _, id := range pf.ids {
			out.counts[id]++
		}
		out.bad = append(out.bad, pf.bad...)
	}
	return out, nil
}

// parseFile reads one visible jsonl file: every line must be a JSON object
// with a numeric "id"; the file must end with a newline.
func parseFile(path string) (parsedFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return parsedFile{}, err
	}
	var pf parsedFile
	name := filepath.Base(path)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		pf.bad = append(pf.bad, fmt.Sprintf("%s: last line has no newline (torn file?)", name))
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for ln := 1; sc.Scan(); ln++ {
		var rec struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.ID == nil {
			pf.bad = append(pf.bad, fmt.Sprintf("%s:%d: not a record with an id: %.120q", name, ln, sc.Text()))
			continue
		}
		pf.ids = append(pf.ids, *rec.ID)
	}
	return pf, sc.Err()
}

// tally is the verdict on an output against ids [0, n).
type tally struct {
	duplicates int     // extra copies: lines beyond the first for an id
	missing    int     // ids in [0, n) absent
	unexpected int     // lines whose id is outside [0, n)
	bad        int     // lines or files that are not records
	dupIDs     []int64 // examples, at most 10 each
	missingIDs []int64
	badLines   []string
}

func tallyOutput(o output, n int) tally {
	var tl tally
	for id, c := range o.counts {
		switch {
		case id < 0 || id >= int64(n):
			tl.unexpected += c
		case c > 1:
			tl.duplicates += c - 1
			tl.dupIDs = append(tl.dupIDs, id)
		}
	}
	for id := range int64(n) {
		if o.counts[id] == 0 {
			tl.missing++
			if len(tl.missingIDs) < 10 {
				tl.missingIDs = append(tl.missingIDs, id)
			}
		}
	}
	slices.Sort(tl.dupIDs)
	if len(tl.dupIDs) > 10 {
		tl.dupIDs = tl.dupIDs[:10]
	}
	tl.bad = len(o.bad)
	tl.badLines = o.bad[:min(len(o.bad), 5)]
	return tl
}

// requireAfterSIGTERM checks the output o visible after a SIGTERM while
// ids were still produced, sent of them so far (read sent after o: every
// visible id is below it), in where ("" or " on the volume"): no id twice,
// nothing else, and something visible (the final checkpoint committed).
func requireAfterSIGTERM(t testing.TB, o output, sent int, where string) {
	t.Helper()
	t.Logf("after the first SIGTERM: %d ids produced, %d visible%s", sent, o.present(sent), where)
	if tl := tallyOutput(o, sent); tl.duplicates+tl.unexpected+tl.bad > 0 {
		t.Errorf("after the first SIGTERM: %s", tl)
	}
	if o.present(sent) == 0 {
		t.Errorf("after the first SIGTERM nothing is visible%s: the final checkpoint was not committed", where)
	}
}

func (tl tally) ok() bool {
	return tl.duplicates == 0 && tl.missing == 0 && tl.unexpected == 0 && tl.bad == 0
}

func (tl tally) String() string {
	return fmt.Sprintf("duplicates=%d (e.g. ids %v) missing=%d (e.g. ids %v) unexpected=%d bad=%d %q",
		tl.duplicates, tl.dupIDs, tl.missing, tl.missingIDs, tl.unexpected, tl.bad, tl.badLines)
}
