package kafka

import (
	"slices"
	"testing"
)

// TestOwnedCountsEachReadersPartitions: partition p of the topic at index
// i belongs to reader (i+p) mod R, so topic a's 4 partitions and topic
// b's 2 over 3 readers are 2, 2 and 2 (a: 0 1 2 0, b: 1 2); partitions
// found later count once known.
func TestOwnedCountsEachReadersPartitions(t *testing.T) {
	s := &Source{cfg: Options{Topics: []string{"a", "b"}, Readers: 3}, readers: make([]*Reader, 3), known: Offsets{}}
	for p := range int32(4) {
		s.known.Set("a", p, 0)
	}
	for p := range int32(2) {
		s.known.Set("b", p, 0)
	}
	if got := s.Owned(); !slices.Equal(got, []int{2, 2, 2}) {
		t.Fatalf("owned %v, want [2 2 2]", got)
	}
	s.known.Set("b", 2, 0) // reader (1+2) mod 3 = 0
	if got := s.Owned(); !slices.Equal(got, []int{3, 2, 2}) {
		t.Fatalf("after a new partition: owned %v, want [3 2 2]", got)
	}
}
