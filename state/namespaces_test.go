package state

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Namespaces lists each namespace under a prefix once, over every key
// group, in key order; keys outside the prefix and without a separator
// after it are told apart.
func TestNamespacesListEachOnceOverEveryKeyGroup(t *testing.T) {
	s := openCfg(t, Config{Dir: filepath.Join(t.TempDir(), "work"), MaxParallelism: 8, KeyGroups: keygroup.Range{Start: 0, End: 8}})
	for kg := range 8 {
		if err := s.SetKeyGroup(kg); err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"a", "b", "b.c", "z"} {
			for i := range 30 {
				set(t, s, fmt.Sprintf("transform/dedup/%s/%03d", ns, i), "v")
			}
		}
		set(t, s, "transform/dedup-other/x/1", "v")
		set(t, s, "transform/deduq/x/1", "v")
	}
	set(t, s, "transform/dedup/bare", "v")
	got, err := s.Namespaces([]byte("transform/dedup/"), '/')
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range got {
		names = append(names, string(ns))
	}
	want := []string{"transform/dedup/a/", "transform/dedup/b.c/", "transform/dedup/b/", "transform/dedup/bare", "transform/dedup/z/"}
	if !slices.Equal(names, want) {
		t.Errorf("Namespaces = %q, want %q", names, want)
	}
}

// Expire is not in a changelog: a restore of the next checkpoint brings
// the keys back from the older base. ExpireForGood makes the next
// checkpoint a full snapshot, so they stay gone.
func TestExpireForGoodOutlivesARestore(t *testing.T) {
	for _, forGood := range []bool{false, true} {
		t.Run(fmt.Sprintf("for-good=%v", forGood), func(t *testing.T) {
			root := t.TempDir()
			s := openCfg(t, Config{Dir: filepath.Join(root, "work")})
			set(t, s, "gone/1", "v")
			set(t, s, "kept/1", "v")
			base := checkpointT(t, s, root, 1)
			s2 := openChain(t, root, base)
			expire := s2.Expire
			if forGood {
				expire = s2.ExpireForGood
			}
			if err := expire([]byte("gone/"), []byte("gone0")); err != nil {
				t.Fatal(err)
			}
			set(t, s2, "kept/2", "v")
			c := checkpointT(t, s2, filepath.Join(root, "2"), 2)
			want := map[string]string{"kept/1": "v", "kept/2": "v"}
			if !forGood {
				want["gone/1"] = "v" // back from checkpoint 1's base
			}
			wantContents(t, openChain(t, root, c), want)
		})
	}
}
