package record

import "testing"

func TestReleasedBatchComesBackEmptyAndZeroed(t *testing.T) {
	b := NewBatch(4)
	if len(b) != 0 || cap(b) < 4 {
		t.Fatalf("NewBatch(4): len %d cap %d, want 0 and >= 4", len(b), cap(b))
	}
	b = append(b, Record{Topic: "t", Value: []byte("v")}, Record{Topic: "u"})
	Release(b)
	if b[0].Topic != "" || b[0].Value != nil || b[1].Topic != "" {
		t.Fatalf("Release left records in the array: %+v", b[:2])
	}
	// The pool may or may not hand the same array back; any batch it hands
	// out must be empty with the capacity asked for.
	for range 3 {
		c := NewBatch(8)
		if len(c) != 0 || cap(c) < 8 {
			t.Fatalf("NewBatch(8): len %d cap %d", len(c), cap(c))
		}
		for i := range c[:cap(c)] {
			if c[:cap(c)][i].Topic != "" {
				t.Fatalf("NewBatch handed out a record left over: %+v", c[:cap(c)][i])
			}
		}
		Release(c)
	}
}
