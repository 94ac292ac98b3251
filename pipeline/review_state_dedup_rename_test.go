package pipeline

import (
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/transform"
)

// renameDedup returns a config change that gives the job's dedup the name
// and key given.
func renameDedup(name, key string) func(*config.Job) {
	return func(c *config.Job) {
		d := c.Pipeline.Transforms[0].Config.(*transform.DedupConfig)
		d.Name, d.Key = name, key
	}
}

// checkpointOnce takes the next checkpoint on a job of one worker and one
// reader, and fails the test unless it completes.
func checkpointOnce(t *testing.T, h *harness, id string) {
	t.Helper()
	restoreDo(t, h, "read reader=0", "")
	restoreDo(t, h, "deliver worker=0", "")
	restoreDo(t, h, "trigger", "")
	restoreDo(t, h, "barrier reader=0", "")
	restoreDo(t, h, "deliver worker=0", "")
	if out := restoreDo(t, h, "events", ""); !strings.Contains(out, "notify-complete "+id) {
		t.Fatalf("checkpoint %s did not complete:\n%s", id, out)
	}
}

// A dedup renamed left its state behind under the old name (no dedup
// expired it), and the next checkpoint recorded only the new name: giving
// the old name back with another key loaded the old field's values as the
// new one's memory, unrefused, and records were dropped. The restore now
// drops the state of dedups the job no longer has (DropDedupState): the
// name given back starts with no memory, as a new name does. (Found by a
// review, whose test expected a refusal.)
func TestReviewStateDedupNameGivenBackStartsWithNoMemory(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	h.opts.dedup, h.opts.dedupKey = true, "id"
	if err := restoreStartAs(h, renameDedup("orders", "id")); err != nil {
		t.Fatal(err)
	}
	restoreDo(t, h, "produce partition=0", "a b c")
	checkpointOnce(t, h, "1")
	h.crash()

	if err := restoreStartAs(h, renameDedup("orders-v2", "id")); err != nil {
		t.Fatalf("rename orders -> orders-v2: %v", err)
	}
	if left := dedupEntries(t, h, "orders"); left != 0 {
		t.Errorf("renamed orders -> orders-v2: %d KV entries of orders left", left)
	}
	restoreDo(t, h, "produce partition=0", "d")
	checkpointOnce(t, h, "2")
	h.crash()

	if err := restoreStartAs(h, renameDedup("orders", "customer")); err != nil {
		t.Fatalf("name orders given back with key customer: %v", err)
	}
	if left := dedupEntries(t, h, "orders"); left != 0 {
		t.Errorf("dedup orders restored with key customer, its state (%d KV entries) holding the values of field id: "+
			"a customer equal to an id seen within the TTL is dropped", left)
	}
	if left := dedupEntries(t, h, "orders-v2"); left != 0 {
		t.Errorf("orders-v2 renamed orders: %d KV entries of orders-v2 left", left)
	}
}

// dedupEntries counts the KV entries of dedup name in the harness's worker 0.
func dedupEntries(t *testing.T, h *harness, name string) int {
	t.Helper()
	left := 0
	ns := "transform/dedup/" + name
	if err := h.r.stores[0].Scan([]byte(ns+"/"), []byte(ns+"0"), func(_, _ []byte) error { left++; return nil }); err != nil {
		t.Fatal(err)
	}
	return left
}
