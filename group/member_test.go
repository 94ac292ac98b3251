package group

import (
	"context"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/idtest"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/kafkatest"
	imetrics "github.com/connector-dev/connector/internal/metrics"
	_ "github.com/connector-dev/connector/sink/file"
	"github.com/connector-dev/connector/source"
	_ "github.com/connector-dev/connector/source/kafka"
	_ "github.com/connector-dev/connector/transform"
)

// groupConfig is a group-mode file-sink job over topic, everything under
// dir, with a dedup on id.
func groupConfig(t *testing.T, b kafkatest.Brokers, topic, dir string, slots int) *config.Job {
	t.Helper()
	return groupConfigWith(t, b, topic, dir, slots, config.GroupClassic)
}

func groupConfigWith(t *testing.T, b kafkatest.Brokers, topic, dir string, slots int, protocol config.GroupProtocol) *config.Job {
	t.Helper()
	y := fmt.Sprintf(`
name: %s
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {interval: 100ms, timeout: 10s, dir: %q}
state: {dir: %q}
pipeline: {transforms: [{type: dedup, key: id, ttl: 1h}]}
sink: {type: file, path: %q, roll_on_checkpoint: true}
http: {addr: "127.0.0.1:0"}
restart: {initial_backoff: 50ms, max_backoff: 200ms}
instances: {mode: group, slots: %d, session_timeout: 6s, protocol: %s}
`, fmt.Sprintf("g-%d-%d", time.Now().UnixNano(), jobSeq.Add(1)), strings.Join(b.Addrs, ","), topic, filepath.Join(dir, "chk"), filepath.Join(dir, "state"),
		filepath.Join(dir, "out"), slots, protocol)
	j, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return j
}

// jobSeq tells apart the jobs of one test binary.
var jobSeq atomic.Int64

type member struct {
	m      *Member
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func startMember(t *testing.T, cfg *config.Job, name string) *member {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Str("member", name).Logger()
	r := &member{m: New(cfg, Options{Registry: reg, Log: log}), reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- r.m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// stop stops the member (its slots' final checkpoints) and waits for Run.
func (r *member) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Fatalf("member stopped with %v, want a clean stop", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("member did not stop within 60s")
	}
}

// running lists the slots the member runs with a running job.
func (r *member) running() []int {
	var ks []int
	for _, s := range r.m.Info().Owned {
		if s.State == "running" {
			ks = append(ks, s.Slot)
		}
	}
	return ks
}

// waitFor polls cond until it holds, or fails after 60s saying what it
// last saw.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s (last seen: %s)", what, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSlots waits until the members run exactly the slots want (a member
// per slice of want, in order).
func waitSlots(t *testing.T, ms []*member, want func(got [][]int) bool) [][]int {
	t.Helper()
	var got [][]int
	waitFor(t, "slots settled", func() (bool, string) {
		got = got[:0]
		for _, m := range ms {
			got = append(got, m.running())
		}
		return want(got), fmt.Sprint(got)
	})
	return got
}

func produceIDs(t *testing.T, b kafkatest.Brokers, topic string, from, to int) {
	t.Helper()
	idtest.Produce(t, b, topic, from, to)
}

func visibleIDs(t *testing.T, dir string) map[int]int { t.Helper(); return idtest.Visible(t, dir) }

func checkOnce(t *testing.T, ids map[int]int, n int) { t.Helper(); idtest.CheckOnce(t, ids, n) }

func waitIDs(t *testing.T, dir string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d ids visible", n), func() (bool, string) {
		got := len(visibleIDs(t, dir))
		return got >= n, fmt.Sprintf("%d ids", got)
	})
}

func disjointCover(slots int) func([][]int) bool {
	return func(got [][]int) bool {
		seen := map[int]bool{}
		for _, ks := range got {
			if len(ks) == 0 {
				return false // every member gets work
			}
			for _, k := range ks {
				if seen[k] {
					return false
				}
				seen[k] = true
			}
		}
		return len(seen) == slots
	}
}

func TestMembersShareTheSlotsAndHandThemOverWithEveryRecordOnce(t *testing.T) {
	for _, p := range []config.GroupProtocol{config.GroupClassic, config.GroupConsumer} {
		t.Run(string(p), func(t *testing.T) { membersShareTheSlots(t, p) })
	}
}

func membersShareTheSlots(t *testing.T, protocol config.GroupProtocol) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 4)
	dir := t.TempDir()
	cfg := groupConfigWith(t, b, topic, dir, 4, protocol)
	out := filepath.Join(dir, "out")

	produceIDs(t, b, topic, 0, 1000)
	a := startMember(t, cfg, "a")
	waitSlots(t, []*member{a}, disjointCover(4))
	waitIDs(t, out, 1000)

	// A second member: the group moves some slots to it, a handing them
	// over with a final checkpoint; ids 500-999 come again (the dedup's
	// state must travel with the slots) and 1000-1999 are new.
	before := a.m.Info().RecordsInTotal
	b2 := startMember(t, cfg, "b")
	got := waitSlots(t, []*member{a, b2}, disjointCover(4))
	t.Logf("slots with two members: %v", got)
	produceIDs(t, b, topic, 500, 2000)
	waitIDs(t, out, 2000)
	// /api/job of a member reads as a job's: its own slots' partitions,
	// counters that never went back when slots left, the job's config.
	in := a.m.Info()
	if in.Name != cfg.Name || in.State != "running" || len(in.Partitions) != len(got[0]) || in.RecordsInTotal < before || len(in.Config) == 0 {
		t.Errorf("a's info: name %s, state %s, %d partitions for slots %v, %d records in (%d before b joined), config %d bytes",
			in.Name, in.State, len(in.Partitions), got[0], in.RecordsInTotal, before, len(in.Config))
	}
	for _, p := range in.Partitions {
		if p.Slot == nil || int(p.Partition)%4 != *p.Slot {
			t.Errorf("a's partition %d reported in slot %v", p.Partition, p.Slot)
		}
	}
	if st := a.m.Status(); !st.Ready || st.Counts.Completed == 0 || len(st.History) == 0 || st.History[0].Slot == nil {
		t.Errorf("a's status: ready %v (%s), %d completed, history %d", st.Ready, st.NotReady, st.Counts.Completed, len(st.History))
	}
	// Each slot's job metrics are served with its slot.
	s, err := imetrics.Gather(prometheus.GathererFunc(a.m.Gather))
	if err != nil {
		t.Fatal(err)
	}
	var slots []string
	for _, se := range s.Series("connector_records_out_total") {
		slots = append(slots, se.Labels["slot"])
	}
	if want := fmt.Sprint(got[0]); strings.Join(slots, " ") != strings.Trim(want, "[]") {
		t.Errorf("a's connector_records_out_total series have slots %v, want %s", slots, want)
	}

	// a leaves: b takes every slot back, with a's state.
	a.stop(t)
	waitSlots(t, []*member{b2}, disjointCover(4))
	produceIDs(t, b, topic, 0, 3000)
	waitIDs(t, out, 3000)
	b2.stop(t)
	checkOnce(t, visibleIDs(t, out), 3000)

	s, err = imetrics.Gather(b2.reg)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Sum("connector_group_handover_seconds"); n == 0 {
		t.Error("connector_group_handover_seconds counted no handover")
	}
}

func TestASlotWaitsForThePreviousOwnersLock(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := groupConfig(t, b, topic, dir, 2)
	// Another owner (a paused process) still holds slot 1.
	if err := os.MkdirAll(cfg.Checkpoint.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := store.Lock(vfs.Default, lockPath(cfg, 1))
	if err != nil {
		t.Fatal(err)
	}
	produceIDs(t, b, topic, 0, 200)
	a := startMember(t, cfg, "a")
	waitFor(t, "slot 1 waiting for its lock", func() (bool, string) {
		in := a.m.Info()
		err := a.m.Ready()
		return len(in.Owned) == 2 && in.Owned[1].State == "waiting for its lock" && in.Owned[0].State == "running" &&
			err != nil && strings.Contains(err.Error(), "slot 1: waiting for its previous owner"), fmt.Sprintf("%+v, ready: %v", in.Owned, err)
	})
	// Only slot 0's partition (partition 0) is in the output meanwhile.
	out := filepath.Join(dir, "out")
	waitFor(t, "slot 0's records", func() (bool, string) {
		n := 0
		for _, e := range mustReadDir(t, out) {
			if strings.Contains(e, SlotName(cfg.Name, 1)) {
				return false, "a file of slot 1: " + e
			}
			if strings.Contains(e, SlotName(cfg.Name, 0)) {
				n++
			}
		}
		return n > 0, fmt.Sprintf("%d files of slot 0", n)
	})
	_ = held.Close()
	waitSlots(t, []*member{a}, disjointCover(2))
	waitIDs(t, out, 200)
	if err := a.m.Ready(); err != nil {
		t.Errorf("ready: %v", err)
	}
	a.stop(t)
	checkOnce(t, visibleIDs(t, out), 200)
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestTheSlotCountCannotChange(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := groupConfig(t, b, topic, dir, 3)
	adm := kafkatest.Admin(t, b)
	if _, err := adm.CreateTopic(context.Background(), 4, 1, nil, SlotTopic(cfg.Name)); err != nil {
		t.Fatal(err)
	}
	kafkatest.WaitTopicReady(t, adm, SlotTopic(cfg.Name), 4)
	m := New(cfg, Options{Log: zerolog.New(zerolog.NewTestWriter(t))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Run(ctx)
	if !errors.Is(err, ErrSlotsChanged) || !errors.Is(err, kafkaclient.ErrMisconfigured) {
		t.Fatalf("Run = %v, want ErrSlotsChanged, classed misconfigured", err)
	}
	for _, want := range []string{"instances.slots is 3", "has 4 partitions", "set it back to 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestSlotConfigGivesEverySlotItsOwnIdentity(t *testing.T) {
	cfg := groupConfig(t, kafkatest.Brokers{Addrs: []string{"127.0.0.1:1"}}, "t", "/d", 8)
	c := SlotConfig(cfg, 3)
	if c.Name != cfg.Name+".slot-3" || c.Checkpoint.Dir != "/d/chk/slot-3" || c.State.Dir != "/d/state/slot-3" || c.Instances.Group() {
		t.Errorf("slot config: name %s, dirs %s %s, mode %s", c.Name, c.Checkpoint.Dir, c.State.Dir, c.Instances.Mode)
	}
	if !strings.HasPrefix(cfg.Name, "g-") || cfg.Checkpoint.Dir != "/d/chk" || !cfg.Instances.Group() {
		t.Errorf("SlotConfig changed the job's config: %s %s %s", cfg.Name, cfg.Checkpoint.Dir, cfg.Instances.Mode)
	}
	if got := lockPath(cfg, 3); got != "/d/chk/slot-3.lock" {
		t.Errorf("lock path %s", got)
	}
	sl := &source.Slot{Index: 3, Of: 8}
	if sl.Group("g") != "g.slot-3" || (*source.Slot)(nil).Group("g") != "g" || !sl.Owns(11) || sl.Owns(12) || !(*source.Slot)(nil).Owns(12) {
		t.Errorf("slot 3 of 8: group %s, owns 11: %v, owns 12: %v", sl.Group("g"), sl.Owns(11), sl.Owns(12))
	}
}

func TestASingleModeProcessIsRefusedTheDirectoriesOfAGroup(t *testing.T) {
	cfg := groupConfig(t, kafkatest.Brokers{Addrs: []string{"127.0.0.1:1"}}, "t", t.TempDir(), 4)
	single := *cfg
	single.Instances.Mode = config.InstancesSingle
	if err := RefuseSingle(&single); err != nil {
		t.Fatalf("before any slot ran: %v", err)
	}
	for _, d := range []string{"slot-2", "slot-10", "slot-x"} {
		if err := os.MkdirAll(filepath.Join(cfg.Checkpoint.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := RefuseSingle(&single)
	if !errors.Is(err, ErrRanInGroupMode) || !strings.Contains(err.Error(), "(slot-10, slot-2)") || !strings.Contains(err.Error(), "run it with instances.mode: group") {
		t.Fatalf("RefuseSingle = %v, want ErrRanInGroupMode naming slot-10 and slot-2 only", err)
	}
}
