package config

import (
	"strconv"
	"strings"
)

// origin remembers where a Job came from: the file name and, for every key
// path found in it, its line and whether it had a value. Validation uses it
// to name lines; defaults use it to tell "absent" from "explicitly zero".
type origin struct {
	name  string
	lines map[string]int  // every key (and list item) present, even if null
	set   map[string]bool // keys that had a non-empty value
	// written holds, for every scalar whose ${VAR} references expanded to
	// something else, the text as the file wrote it; writtenList, for a
	// list with such an item, every item as written. Dump shows these, so
	// a secret passed through the environment into a field that is not a
	// Secret (a token command, an endpoint with a key) is never printed.
	written     map[string]string
	writtenList map[string][]string
	// lastLine is the file's last line: at the end of a file, yaml.v3
	// may name the line after it. 0: not known.
	lastLine int
}

func newOrigin(name string) *origin {
	return &origin{name: name, lines: map[string]int{}, set: map[string]bool{}, written: map[string]string{}, writtenList: map[string][]string{}}
}

// file returns the file name; "" for a Job built in code.
func (o *origin) file() string {
	if o == nil {
		return ""
	}
	return o.name
}

// last returns the file's last line, or 0 if not known.
func (o *origin) last() int {
	if o == nil {
		return 0
	}
	return o.lastLine
}

// line returns the line of key, or of its closest parent present in the
// file, or 0.
func (o *origin) line(key string) int {
	if o == nil {
		return 0
	}
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := o.lines[k]; ok {
			return l
		}
	}
	return 0
}

// problemLine returns the line at which to report a problem with key: its
// line, or its closest present parent's, or, for a file without either (a
// required key left out), 1: every problem with a file names a line. 0
// for a Job built in code.
func (o *origin) problemLine(key string) int {
	line := o.line(key)
	if line == 0 && o != nil {
		line = 1
	}
	return line
}

// seen reports whether key is in the file, even with an empty value.
func (o *origin) seen(key string) bool {
	if o == nil {
		return false
	}
	_, ok := o.lines[key]
	return ok
}

// isSet reports whether key has a non-empty value in the file.
func (o *origin) isSet(key string) bool { return o != nil && o.set[key] }

// inherit gives key, filled with the value of key from, from's text as
// the file wrote it, if interpolation changed it.
func (o *origin) inherit(key, from string) {
	if o == nil {
		return
	}
	if s, ok := o.written[from]; ok {
		o.written[key] = s
	}
	if l, ok := o.writtenList[from]; ok {
		o.writtenList[key] = l
	}
}

// parentKey strips the last ".name" or "[i]" from a key path.
func parentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i < 0 {
		return ""
	}
	return k[:i]
}

// joinKey appends a mapping key to a path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexKey appends a list index to a path.
func indexKey(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
