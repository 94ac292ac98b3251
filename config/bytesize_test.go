package config

import "testing"

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
	}{
		{"0", 0}, {"4096", 4096}, {"10B", 10}, {"64MiB", 64 * MiB}, {"64 mib", 64 * MiB},
		{"1KB", 1000}, {"1.5GB", 1_500_000_000}, {"2GiB", 2 * GiB}, {"1TiB", TiB}, {"0.5KiB", 512},
	} {
		if got, err := ParseByteSize(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1", "12 parsecs", "1e3", "1..2KB", "99999999999TiB"} {
		if got, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) = %v, want an error", bad, got)
		}
	}
}

func TestByteSizeStringUsesLargestExactUnit(t *testing.T) {
	for size, want := range map[ByteSize]string{0: "0B", 1000: "1000B", 1024: "1KiB", 128 * MiB: "128MiB", 3 * GiB: "3GiB", MiB + 1: "1048577B"} {
		if got := size.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(size), got, want)
		}
	}
}
