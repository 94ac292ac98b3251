package binpages

import (
	"strings"
	"testing"
)

// A process's smaps, cut down: a static binary's mappings (its header,
// code, read-only data, the C library's relocations made read-only after
// start, data, a tail not resident), the heap, a shared mapping of the
// binary, another file's, and one of the binary's inode on another device.
const smapsFixture = `00400000-00401000 r--p 00000000 fd:00 1234                               /app/connector
Rss:                   4 kB
Anonymous:             0 kB
00401000-01481000 r-xp 00001000 fd:00 1234                               /app/connector
Size:              16896 kB
Rss:                7800 kB
Pss:                7800 kB
Anonymous:             0 kB
01481000-0255c000 r--p 01081000 fd:00 1234                               /app/connector
Rss:               11600 kB
Anonymous:             0 kB
0255c000-02560000 r--p 0215b000 fd:00 1234                               /app/connector
Rss:                  16 kB
Anonymous:             8 kB
02560000-02676000 rw-p 0215f000 fd:00 1234                               /app/connector
Rss:                 580 kB
Anonymous:           156 kB
02676000-02690000 r--p 00000000 fd:00 1234                               /app/connector
Rss:                   0 kB
Anonymous:             0 kB
c000000000-c004000000 rw-p 00000000 00:00 0
Rss:               51000 kB
Anonymous:         51000 kB
7f0000000000-7f0000100000 r--s 00000000 fd:00 1234                       /app/connector
Rss:                1024 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 fd:00 99                         /data/other
Rss:                1024 kB
Anonymous:             0 kB
7f0000400000-7f0000500000 r--p 00000000 08:00 1234                       /mnt/samefileid
Rss:                1024 kB
Anonymous:             0 kB
`

func TestDroppableIsTheBinarysUnwrittenReadOnlyMappings(t *testing.T) {
	maps, err := parseSmaps([]byte(smapsFixture))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 10 {
		t.Fatalf("parsed %d mappings, want 10", len(maps))
	}
	got := droppable(maps, fileID{"fd:00", 1234})
	var starts []uint64
	var kb uint64
	for _, m := range got {
		starts = append(starts, m.start)
		kb += m.rssKB
	}
	// The header page, the text and the read-only data: not the
	// relocations (written), the data (writable), the unmapped tail (not
	// resident), the heap, the shared mapping, other files.
	want := []uint64{0x400000, 0x401000, 0x1481000}
	if len(starts) != len(want) {
		t.Fatalf("droppable starts %x, want %x", starts, want)
	}
	for i := range want {
		if starts[i] != want[i] {
			t.Fatalf("droppable starts %x, want %x", starts, want)
		}
	}
	if kb != 4+7800+11600 {
		t.Errorf("droppable Rss %d kB, want %d", kb, 4+7800+11600)
	}
	if m := got[1]; m.end != 0x1481000 || m.perms != "r-xp" {
		t.Errorf("the text mapping parsed as %+v", m)
	}
}

func TestAMappingWithoutItsFieldsIsKept(t *testing.T) {
	// A kernel without the Anonymous field: the mapping may hold written
	// pages, so it stays.
	maps, err := parseSmaps([]byte("00401000-01481000 r-xp 00001000 fd:00 1234 /app/connector\nRss: 7800 kB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := droppable(maps, fileID{"fd:00", 1234}); len(got) != 0 {
		t.Errorf("droppable %+v, want none", got)
	}
}

func TestParseSmapsRefusesWhatIsNotSmaps(t *testing.T) {
	for _, in := range []string{
		"not smaps at all\n",
		"00401000 r-xp 00001000 fd:00 1234 /app/connector\n",
		"01481000-00401000 r-xp 00001000 fd:00 1234 /app/connector\n",
		"00401000-01481000 r-xp 00001000 fd:00 x /app/connector\n",
	} {
		if _, err := parseSmaps([]byte(in)); err == nil || !strings.Contains(err.Error(), "binpages: smaps") {
			t.Errorf("parseSmaps(%q): %v, want a binpages: smaps error", in, err)
		}
	}
}
