package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes. In YAML it is an integer or a number with a
// unit: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
// 1024), case-insensitive, e.g. 64MiB.
type ByteSize int64

// Byte size units.
const (
	KiB ByteSize = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

var errByteSize = errors.New("not a byte size")

// ParseByteSize parses "64MiB", "1.5GB", "4096" and the like.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if !ok || num == "" {
		return 0, errByteSize
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, errByteSize
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, errByteSize
	}
	return ByteSize(v), nil
}

// String writes the size with the largest binary unit that divides it, e.g.
// 128MiB; otherwise in bytes.
func (b ByteSize) String() string {
	for _, u := range []struct {
		size ByteSize
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalYAML writes the size as String does.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// UnmarshalText parses what ParseByteSize parses.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
