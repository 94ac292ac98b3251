package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// crashCfg is one way of losing unsynced data in a simulated crash.
type crashCfg struct {
	percent int // UnsyncedDataPercent
	seed    uint64
}

func (c crashCfg) String() string { return fmt.Sprintf("unsynced=%d%%/seed=%d", c.percent, c.seed) }

// crashCfgs: lose everything unsynced, keep everything, and keep a random
// half with several seeds.
var crashCfgs = func() []crashCfg {
	cfgs := []crashCfg{{percent: 0}, {percent: 100}}
	for seed := uint64(1); seed <= 8; seed++ {
		cfgs = append(cfgs, crashCfg{percent: 50, seed: seed})
	}
	return cfgs
}()

// crashPoint is the filesystem as a crash would leave it just before
// operation index k.
type crashPoint struct {
	k       int
	durable bool // the metadata directory was fsynced after the rename
	clones  []*vfs.MemFS
}

// crasher counts the operations of one Save and, at operation k, takes a
// crash clone for every crashCfg before the operation runs.
type crasher struct {
	mem      *vfs.MemFS
	armed    bool
	crashAt  int
	n        int
	renamed  bool
	durable  bool
	captured *crashPoint
}

func (c *crasher) String() string { return "crasher" }

func (c *crasher) MaybeError(op errorfs.Op) error {
	if !c.armed {
		return nil
	}
	if c.n == c.crashAt {
		c.captured = &crashPoint{k: c.n, durable: c.durable, clones: c.clone()}
	}
	c.n++
	// Operations run after MaybeError returns: the rename and the
	// directory fsync that follows it are done once the next op starts.
	if op.Kind == errorfs.OpRename {
		c.renamed = true
	}
	if c.renamed && op.Kind == errorfs.OpFileSync && op.Path == testDir {
		c.durable = true
	}
	return nil
}

func (c *crasher) clone() []*vfs.MemFS {
	var out []*vfs.MemFS
	for _, cfg := range crashCfgs {
		cc := vfs.CrashCloneCfg{UnsyncedDataPercent: cfg.percent}
		if cfg.percent > 0 {
			cc.RNG = rand.New(rand.NewPCG(cfg.seed, uint64(c.crashAt)))
		}
		out = append(out, c.mem.CrashClone(cc))
	}
	return out
}

// crashScenario: checkpoints 1..3 completed with R retained; checkpoint 4
// is being saved. Checkpoint k references w1/k.sst, w2/k.sst and the shared
// shared/base.sst.
func crashFiles(id checkpoint.ID) []string {
	return []string{fmt.Sprintf("w1/%d.sst", id), fmt.Sprintf("w2/%d.sst", id), "shared/base.sst"}
}

// runCrashScenario saves 1..3, then saves 4 with a crash clone taken
// before operation crashAt. It returns the point (nil if Save needed fewer
// operations) and how many operations Save 4 took.
func runCrashScenario(t *testing.T, retained, crashAt int) (*crashPoint, int) {
	t.Helper()
	mem := newMem(t)
	for id := checkpoint.ID(1); id <= 4; id++ {
		writeState(t, mem, crashFiles(id)...)
	}
	c := &crasher{mem: mem, crashAt: crashAt}
	s, err := Open(errorfs.Wrap(mem, c), testDir, testState, retained, zerolog.Nop())
	must(t, err)
	defer s.Close()
	for id := checkpoint.ID(1); id <= 3; id++ {
		must(t, s.Save(meta(id, crashFiles(id)...)))
	}
	c.armed = true
	must(t, s.Save(meta(4, crashFiles(4)...)))
	c.armed = false
	if c.captured == nil && crashAt == c.n {
		// Crash after Save returned.
		c.captured = &crashPoint{k: c.n, durable: c.durable, clones: c.clone()}
	}
	return c.captured, c.n
}

func TestSaveCrashAtEveryStepLoadsNewOrPrevious(t *testing.T) {
	runs := 0
	for _, retained := range []int{1, 2} {
		_, ops := runCrashScenario(t, retained, -1)
		if ops < 10 {
			t.Fatalf("Save took only %d operations; the instrumentation is broken", ops)
		}
		for k := 0; k <= ops; k++ {
			p, _ := runCrashScenario(t, retained, k)
			for i, clone := range p.clones {
				name := fmt.Sprintf("R=%d/crash-before-op-%d/%s", retained, k, crashCfgs[i])
				checkRecovery(t, name, clone, retained, p.durable)
				runs++
			}
		}
		t.Logf("R=%d: %d crash points (Save takes %d operations) x %d crash configs",
			retained, ops+1, ops, len(crashCfgs))
	}
	t.Logf("%d simulated crashes recovered", runs)
}

// checkRecovery opens a store on the crashed filesystem and checks that it
// restores checkpoint 4 or 3 intact (only 4 once the save was durable), and
// that the store goes on working.
func checkRecovery(t *testing.T, name string, fs *vfs.MemFS, retained int, durable bool) {
	t.Helper()
	s, err := Open(fs, testDir, testState, retained, zerolog.Nop())
	if err != nil {
		t.Fatalf("%s: Open: %v", name, err)
	}
	defer s.Close()
	got, _, err := s.LoadLatest()
	if err != nil || got == nil {
		t.Fatalf("%s: LoadLatest = %v, %v; want checkpoint 3 or 4", name, got, err)
	}
	want := meta(got.ID, crashFiles(got.ID)...)
	switch {
	case got.ID != 3 && got.ID != 4:
		t.Fatalf("%s: restored checkpoint %d, want 3 or 4", name, got.ID)
	case durable && got.ID != 4:
		t.Fatalf("%s: restored %d after the save was durable, want 4", name, got.ID)
	case !reflect.DeepEqual(*got, want):
		t.Fatalf("%s: restored %+v, want %+v", name, *got, want)
	}
	for _, f := range crashFiles(got.ID) {
		if !stateExists(fs, f) {
			t.Fatalf("%s: restored checkpoint %d but its file %s is gone", name, got.ID, f)
		}
	}
	if s.MaxID() < got.ID {
		t.Fatalf("%s: MaxID %d below the restored id %d", name, s.MaxID(), got.ID)
	}

	// The job resumes: the next checkpoint saves and the clean-up catches up.
	next := s.MaxID() + 1
	writeState(t, fs, crashFiles(next)...)
	if err := s.Save(meta(next, crashFiles(next)...)); err != nil {
		t.Fatalf("%s: Save(%d) after recovery: %v", name, next, err)
	}
	latest, _, err := s.LoadLatest()
	if err != nil || latest == nil || latest.ID != next {
		t.Fatalf("%s: LoadLatest after recovery = %v, %v; want %d", name, latest, err, next)
	}
	retainedFiles := map[string]bool{}
	for _, id := range restorable(t, s) {
		for _, f := range crashFiles(id) {
			retainedFiles[f] = true
		}
	}
	for id := checkpoint.ID(1); id <= 3; id++ {
		for _, f := range crashFiles(id) {
			if stateExists(fs, f) != retainedFiles[f] {
				t.Fatalf("%s: file %s exists=%v, retained=%v: a dropped checkpoint's file leaked or a retained one was deleted",
					name, f, stateExists(fs, f), retainedFiles[f])
			}
		}
	}
}
