package registry

import (
	"slices"
	"testing"
)

func TestRegistryAddsGetsAndListsAndRefusesTwice(t *testing.T) {
	var r Of[int]
	r.What = "number"
	r.Add("b", 2)
	r.Add("a", 1)
	if v, ok := r.Get("a"); !ok || v != 1 {
		t.Errorf("Get(a) = %d, %v", v, ok)
	}
	if _, ok := r.Get("c"); ok {
		t.Error("Get(c) found something")
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names = %v", got)
	}
	defer func() {
		if msg := recover(); msg != `number "a" registered twice` {
			t.Errorf("second Add: panic %v", msg)
		}
	}()
	r.Add("a", 3)
}
