package binpages

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// mapping is one of a process's mappings, as /proc/PID/smaps gives it.
type mapping struct {
	start, end    uint64
	perms         string // "r-xp": read, write, execute, private or shared
	file          fileID
	rssKB, anonKB uint64 // Rss and Anonymous, kB
}

// fileID names a mapped file as smaps does: its device (major:minor, in
// hex) and inode.
type fileID struct {
	dev   string
	inode uint64
}

// droppable are the mappings Release may drop: exe's, private, not
// writable, resident, and without a page of the process's own. A private
// mapping's page becomes the process's own (Anonymous) when it is written,
// as the C library of a static binary writes its relocations at start into
// a segment it then makes read-only: such a page dropped would read back as
// the file's bytes, not what was written. A shared mapping is left alone:
// another process may be what keeps it resident.
func droppable(maps []mapping, exe fileID) []mapping {
	var out []mapping
	for _, m := range maps {
		if m.file != exe || len(m.perms) != 4 || m.perms[1] == 'w' || m.perms[3] != 'p' {
			continue
		}
		if m.anonKB != 0 || m.rssKB == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// parseSmaps reads the mappings of an smaps file: for each, a header line
// (start-end perms offset dev inode [path]) and then its fields ("Rss:
// 12 kB"). A mapping whose Rss or Anonymous field is missing (a kernel
// without it) counts as resident and written, which keeps it.
func parseSmaps(b []byte) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20) // a path may be long
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if name, ok := strings.CutSuffix(f[0], ":"); ok {
			if len(out) == 0 || len(f) < 2 {
				continue // a field before any mapping, or without a value
			}
			m := &out[len(out)-1]
			switch name {
			case "Rss":
				m.rssKB = parseKB(f[1], m.rssKB)
			case "Anonymous":
				m.anonKB = parseKB(f[1], m.anonKB)
			}
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok || len(f) < 5 {
			return nil, fmt.Errorf("binpages: smaps: neither a mapping nor a field: %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		inode, err3 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || end <= start {
			return nil, fmt.Errorf("binpages: smaps: a bad mapping: %q", sc.Text())
		}
		out = append(out, mapping{start: start, end: end, perms: f[1], file: fileID{f[3], inode}, rssKB: unknownKB, anonKB: unknownKB})
	}
	return out, sc.Err()
}

// unknownKB is a field not (yet) read: not zero, so that droppable keeps
// the mapping.
const unknownKB = 1 << 62

// parseKB is a field's kB, or was if it is not a number.
func parseKB(s string, was uint64) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return was
	}
	return n
}
