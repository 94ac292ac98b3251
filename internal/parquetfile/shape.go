package parquetfile

import "encoding/binary"

// The records of a topic mostly have one layout: the same keys in the same
// order, spaced the same, with only the values differing. The scanner keeps
// the layout of the last record it scanned in full, as the bytes between
// its values (keys, colons, commas and spaces), and tries the next record
// against it: where every one of those byte strings is found again, around
// values that scan as before, the record parses as the last one did, key
// for key, and only its values need a look. Anything else (another layout,
// a bad value) goes to the full scan, which learns the new layout.

// shape is the layout of a record's top-level object.
type shape struct {
	ok      bool
	slots   []shapeSlot
	tail    string // the bytes after the last value
	missing []int  // the columns no slot sets: absent in every record of the layout
}

// shapeSlot is a top-level value of the layout.
type shapeSlot struct {
	lit string     // the bytes before the value
	col int        // the column of the value; -1: none; -2: those of e
	e   *trieEntry // of the value's key
	// The first 16 bytes of lit as two little-endian words, zero-padded,
	// and the masks of lit's bytes in them: most keys with their quotes,
	// colon and comma fit, and are then compared by two loads.
	w    [2]uint64
	mask [2]uint64
}

// setWords sets sl.w and sl.mask from sl.lit.
func (sl *shapeSlot) setWords() {
	sl.w, sl.mask = [2]uint64{}, [2]uint64{}
	for i := 0; i < len(sl.lit) && i < 16; i++ {
		sl.w[i/8] |= uint64(sl.lit[i]) << (8 * (i % 8))
		sl.mask[i/8] |= 0xff << (8 * (i % 8))
	}
}

// litAt says whether data[i:] starts with sl.lit.
func (sl *shapeSlot) litAt(data []byte, i int) bool {
	if len(sl.lit) <= 16 && len(data)-i >= 16 {
		return binary.LittleEndian.Uint64(data[i:])&sl.mask[0] == sl.w[0] &&
			binary.LittleEndian.Uint64(data[i+8:])&sl.mask[1] == sl.w[1]
	}
	return len(data)-i >= len(sl.lit) && string(data[i:i+len(sl.lit)]) == sl.lit
}

// slot is where the full scan found a top-level value, and its key's entry.
type slot struct {
	start, end int
	e          *trieEntry
}

// learn makes the layout of data, which the full scan accepted with its
// top-level values at s.slots, the one to try next. A record with a value
// scanned for nested columns has none: its layout would not say whether
// the value is still an object.
func (s *scanner) learn(data []byte) {
	sh := &s.shape
	sh.ok = false
	if len(s.slots) == 0 {
		return
	}
	for _, v := range s.slots {
		if v.e != nil && v.e.child != nil {
			return
		}
	}
	all := string(data) // one allocation for the bytes of every slot
	sh.slots = sh.slots[:0]
	at := 0
	for _, v := range s.slots {
		sl := shapeSlot{lit: all[at:v.start], col: -1, e: v.e}
		if v.e != nil && len(v.e.cols) == 1 {
			sl.col = v.e.cols[0]
		} else if v.e != nil && len(v.e.cols) > 1 {
			sl.col = -2
		}
		sl.setWords()
		sh.slots = append(sh.slots, sl)
		at = v.end
	}
	sh.tail = all[at:]
	sh.missing = sh.missing[:0]
	for c, raw := range s.raw {
		if raw == nil {
			sh.missing = append(sh.missing, c)
		}
	}
	sh.ok = true
}

// scanShape scans data as a record of the last layout and reports whether
// it is one: if not, s.raw is not what a full scan finds. A record of the
// layout sets the columns of its slots, and those of missing are nil: s.raw
// is cleared no more than that (a clear of the whole, a slice of pointers,
// was 1.5% of a Parquet drain's CPU).
func (s *scanner) scanShape(data []byte) bool {
	for _, c := range s.shape.missing {
		s.raw[c] = nil
	}
	i := 0
	for k := range s.shape.slots {
		sl := &s.shape.slots[k]
		if !sl.litAt(data, i) {
			return false
		}
		i += len(sl.lit)
		start := i
		var err error
		escaped := false
		if i < len(data) && data[i] == '"' {
			i, escaped, err = scanString(data, i)
		} else {
			i, err = s.value(data, i, 2) // as the full scan does below the top level
		}
		if err != nil {
			return false
		}
		switch c := sl.col; {
		case c >= 0:
			s.raw[c], s.escaped[c] = data[start:i], escaped
		case c == -2:
			for _, c := range sl.e.cols {
				s.raw[c], s.escaped[c] = data[start:i], escaped
			}
		}
	}
	return string(data[i:]) == s.shape.tail
}
