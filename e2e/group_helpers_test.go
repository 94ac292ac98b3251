package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// A job in group mode
//
// With instances.mode: group (package group) several processes of one
// config run side by side on the same checkpoint.dir, state.dir and sink;
// each is a member of the job's Kafka group <name>.slots and runs the
// slots the group gives it, each slot a job of its own named
// <name>.slot-<k>. The helpers start and stop members, read what each says
// on /api/job, wait until the group settled (every slot running on one
// member) and pause a member past its session timeout;
// group_stall_helpers_test.go times the handovers, and
// group_sinks_test.go has the PostgreSQL and S3 sinks' readers and checks.

// groupSession is instances.session_timeout of the group tests: the least
// the broker allows by default (group.min.session.timeout.ms), so that a
// dead or paused member's slots move as soon as Kafka lets them.
const groupSession = 6 * time.Second

// The contract's group-mode log lines and slot states (/api/job).
const (
	msgSlotsLost      = "slots lost (this member was dropped from the group): stopping them"
	msgCheckpointDone = "checkpoint completed"
	slotRunning       = "running"
	slotWaiting       = "waiting for its lock"
)

// groupJob is a job run in group mode, and its members: the processes the
// test started and has not stopped (a paused one among them). Like job,
// it is used from the test goroutine only.
type groupJob struct {
	*job
	slots  int
	live   []*proc
	paused *proc // SIGSTOPped and not yet continued, or nil
}

// newGroupJob makes a job in group mode with slots slots (the other keys
// of instances as groupSession and the classic protocol), whose members
// share every directory; its slot topic is deleted when the test ends.
func newGroupJob(t *testing.T, b kafkatest.Brokers, spec jobSpec, slots int) *groupJob {
	t.Helper()
	cfg := map[string]map[string]any{}
	for section, keys := range spec.Config {
		cfg[section] = maps.Clone(keys)
	}
	cfg["instances"] = map[string]any{"mode": "group", "slots": slots, "session_timeout": groupSession.String(), "protocol": "classic"}
	spec.Config = cfg
	g := &groupJob{job: newJob(t, b, spec), slots: slots}
	adm := kafkatest.Admin(t, b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, g.name+".slots")
	})
	// Runs before the job's cleanup kills the members: a failed test shows
	// every member's log tail, not only the last two runs'.
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range g.live {
				g.logTail(p)
			}
		}
	})
	t.Logf("job %s in group mode: %d slots, session timeout %v", g.name, slots, groupSession)
	return g
}

// groupMode reports whether the job runs in group mode: its processes
// then run side by side.
func (j *job) groupMode() bool { return j.spec.Config["instances"]["mode"] == "group" }

// slotJob is the name of slot k's job; it is also the consumer group the
// slot commits its offsets to (source.group is the job's name).
func (g *groupJob) slotJob(k int) string { return g.name + ".slot-" + strconv.Itoa(k) }

// start starts a member.
func (g *groupJob) start() *proc {
	g.t.Helper()
	p := g.job.start()
	g.live = append(g.live, p)
	return p
}

// drop forgets a member that the test stopped.
func (g *groupJob) drop(p *proc) {
	g.live = slices.DeleteFunc(g.live, func(q *proc) bool { return q == p })
}

// member is what a member's /api/job says in group mode.
type member struct {
	Mode       string       `json:"mode"`
	Member     string       `json:"member"`
	Generation int32        `json:"generation"`
	SlotsTotal int          `json:"slots_total"`
	Slots      []memberSlot `json:"slots"`
}

// memberSlot is a slot a member runs, or waits for, or is stopping.
type memberSlot struct {
	Slot  int    `json:"slot"`
	State string `json:"state"`
	Job   *struct {
		RecordsOutTotal int64 `json:"records_out_total"`
		LastCompleted   *struct {
			ID      uint64 `json:"id"`
			Offsets string `json:"offsets"`
		} `json:"last_completed"`
	} `json:"job"`
}

// running lists the slots the member runs (state "running").
func (m member) running() []int {
	var ks []int
	for _, s := range m.Slots {
		if s.State == slotRunning {
			ks = append(ks, s.Slot)
		}
	}
	return ks
}

// recordsOut sums what the member's slot jobs wrote to the sink.
func (m member) recordsOut() int64 {
	var n int64
	for _, s := range m.Slots {
		if s.Job != nil {
			n += s.Job.RecordsOutTotal
		}
	}
	return n
}

// member asks p's /api/job.
func (p *proc) member() (member, error) {
	code, body, err := p.get("/api/job")
	if err != nil {
		return member{}, err
	}
	var m member
	if code != 200 {
		return m, fmt.Errorf("%s: /api/job: HTTP %d: %.200s", p, code, body)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%s: /api/job: %v: %.200s", p, err, body)
	}
	if m.Mode != "group" {
		return m, fmt.Errorf("%s: /api/job says mode %q, want group", p, m.Mode)
	}
	return m, nil
}

// view is what every live member but a paused one says on /api/job.
func (g *groupJob) view() (map[*proc]member, error) {
	v := map[*proc]member{}
	for _, p := range g.live {
		if p == g.paused {
			continue
		}
		m, err := p.member()
		if err != nil {
			return nil, err
		}
		v[p] = m
	}
	return v, nil
}

// describe says which member runs which slot, and in what state the
// slots are that do not run yet.
func describe(v map[*proc]member) string {
	ps := slices.SortedFunc(maps.Keys(v), func(a, b *proc) int { return cmp.Compare(a.n, b.n) })
	var parts []string
	for _, p := range ps {
		var ss []string
		for _, s := range v[p].Slots {
			if s.State == slotRunning {
				ss = append(ss, strconv.Itoa(s.Slot))
			} else {
				ss = append(ss, fmt.Sprintf("%d (%s)", s.Slot, s.State))
			}
		}
		parts = append(parts, fmt.Sprintf("%s gen %d: [%s]", p, v[p].Generation, strings.Join(ss, " ")))
	}
	return strings.Join(parts, "; ")
}

// pollGroup asks the members for their /api/job every 100ms until cond
// holds of what they say, and returns that. It fails the test, with every
// member's log tail and what cond last said, when a member ends or
// timeout passes.
func (g *groupJob) pollGroup(timeout time.Duration, what string, cond func(map[*proc]member) (bool, string)) map[*proc]member {
	g.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		for _, p := range g.live {
			if p.exited() {
				g.fatalAll("%s: %s ended by itself: %s", what, p, p.status())
			}
		}
		v, err := g.view()
		if err == nil {
			ok, state := cond(v)
			if ok {
				return v
			}
			last = state
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			g.fatalAll("%s: not within %v; last: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fatalAll prints every member's log tail and fails the test now.
func (g *groupJob) fatalAll(format string, args ...any) {
	g.t.Helper()
	for _, p := range g.live {
		g.logTail(p)
	}
	g.t.Fatalf(format, args...)
}

// settled holds when every member is in the same generation of the
// group and runs a slot, every slot runs on one member, and no member has
// a slot in another state (waiting for its lock, stopping, starting): no
// rebalance or handover is under way. A member the group dropped reports
// its old generation and no slot until it joined again. (Every member
// runs a slot once the group settled only while there are no more members
// than slots; the tests keep it so.)
func (g *groupJob) settled(v map[*proc]member) (bool, string) {
	owners := map[int]int{}
	others := 0
	gens := map[int32]bool{}
	ok := true
	for _, m := range v {
		gens[m.Generation] = true
		ok = ok && len(m.running()) > 0
		for _, s := range m.Slots {
			if s.State == slotRunning {
				owners[s.Slot]++
			} else {
				others++
			}
		}
	}
	ok = ok && len(gens) == 1 && len(owners) == g.slots && others == 0
	for _, c := range owners {
		ok = ok && c == 1
	}
	return ok, describe(v)
}

// waitSettled waits until the group settled and returns each slot's
// member.
func (g *groupJob) waitSettled(timeout time.Duration, after string) map[int]*proc {
	g.t.Helper()
	t0 := time.Now()
	v := g.pollGroup(timeout, "waiting for every slot to run on one member after "+after, g.settled)
	g.t.Logf("settled %v after %s: %s", time.Since(t0).Round(time.Millisecond), after, describe(v))
	owners := map[int]*proc{}
	for p, m := range v {
		for _, k := range m.running() {
			owners[k] = p
		}
	}
	return owners
}

// slotsOf returns the slots p runs; it fails the test if p cannot say.
func (g *groupJob) slotsOf(p *proc) []int {
	g.t.Helper()
	m, err := p.member()
	if err != nil {
		g.fatalf(p, "%v", err)
	}
	return m.running()
}

// pause SIGSTOPs z, which must run a slot, and makes the case of a member
// paused past its session timeout happen: it waits until another member
// was given one of z's slots and waits for the lock z still holds, then
// SIGCONTs z and waits until z logged that it lost its slots (the group
// dropped it). The group settling afterwards is the caller's to wait for.
func (g *groupJob) pause(z *proc) {
	g.t.Helper()
	slots := g.slotsOf(z)
	if len(slots) == 0 {
		g.fatalf(z, "harness: %s runs no slot; pause one that does", z)
	}
	lost := len(logLines[json.RawMessage](g.job, msgSlotsLost, z))
	t0 := time.Now()
	z.signal(syscall.SIGSTOP)
	g.paused = z
	var waiter string
	g.pollGroup(groupSession+time.Minute, fmt.Sprintf("waiting, with %s paused, for another member to be given one of its slots %v and wait for its lock", z, slots),
		func(v map[*proc]member) (bool, string) {
			for p, m := range v {
				for _, s := range m.Slots {
					if slices.Contains(slots, s.Slot) && s.State == slotWaiting {
						waiter = fmt.Sprintf("%s was given slot %d and waits for its lock", p, s.Slot)
						return true, ""
					}
				}
			}
			return false, describe(v)
		})
	g.t.Logf("SIGSTOP %s (slots %v): %v later %s", z, slots, time.Since(t0).Round(time.Millisecond), waiter)
	z.signal(syscall.SIGCONT)
	g.paused = nil
	t1 := time.Now()
	g.pollUntil(z, time.Minute, 100*time.Millisecond, func() (bool, string) {
		n := len(logLines[json.RawMessage](g.job, msgSlotsLost, z))
		return n > lost, fmt.Sprintf("%s logged %q %d times since its start, as before its pause", z, msgSlotsLost, n)
	})
	g.t.Logf("SIGCONT %s after %v paused: it logged that it lost its slots %v later", z,
		t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
}

// waitDrained waits until every slot's last completed checkpoint holds, as
// its source offsets, the end of each of the slot's partitions of the
// job's topic as they are now. Call it once nothing more is produced.
func (g *groupJob) waitDrained(timeout time.Duration) {
	g.t.Helper()
	ends := endOffsets(g.t, g.brokers, g.topic)
	t0 := time.Now()
	g.pollGroup(timeout, fmt.Sprintf("waiting for every slot's checkpoint at the partition ends %v", sorted(ends)),
		func(v map[*proc]member) (bool, string) {
			done := 0
			var behind []string
			for p, m := range v {
				for _, s := range m.Slots {
					if s.State != slotRunning || s.Job == nil || s.Job.LastCompleted == nil {
						behind = append(behind, fmt.Sprintf("slot %d on %s: %s, no checkpoint", s.Slot, p, s.State))
						continue
					}
					cp, err := checkpointOffsets([]byte(s.Job.LastCompleted.Offsets), g.topic)
					if err != nil {
						behind = append(behind, fmt.Sprintf("slot %d on %s: %v", s.Slot, p, err))
						continue
					}
					at := true
					for part, end := range ends {
						if int(part)%g.slots == s.Slot && cp[part] != end {
							at = false
							behind = append(behind, fmt.Sprintf("slot %d on %s: %s/%d at %d of %d", s.Slot, p, g.topic, part, cp[part], end))
						}
					}
					if at {
						done++
					}
				}
			}
			return done == g.slots, fmt.Sprintf("%d of %d slots at the ends; %s", done, g.slots, strings.Join(behind, "; "))
		})
	g.t.Logf("every slot's checkpoint covers the partition ends, %v after the wait began", time.Since(t0).Round(time.Millisecond))
}

// terminateAll SIGTERMs the members one after another, each required to
// exit 0 (the others take its slots meanwhile).
func (g *groupJob) terminateAll() {
	g.t.Helper()
	for len(g.live) > 0 {
		g.terminateMember(g.live[0])
	}
}

// requireSlotGroupsAtInputEnd requires each slot's consumer group to have
// committed the end of every one of its partitions of the input topic
// (call it once the job drained the topic and stopped).
func (g *groupJob) requireSlotGroupsAtInputEnd() {
	g.t.Helper()
	ends := endOffsets(g.t, g.brokers, g.topic)
	for k := range g.slots {
		committed := committedOffsets(g.t, g.brokers, g.slotJob(k), g.topic)
		for part, end := range ends {
			if int(part)%g.slots == k && committed[part] != end {
				g.t.Errorf("group %s committed %s/%d at %d, want its end %d", g.slotJob(k), g.topic, part, committed[part], end)
			}
		}
	}
	g.t.Logf("each slot's group committed the ends of its partitions of %s: %v", g.topic, sorted(ends))
}

// requireOneRunPerCheckpoint requires every checkpoint of a slot to have
// been completed by one run only: two members running one slot at once
// (its lock not holding) would each complete the checkpoints after the one
// they both restored.
func (g *groupJob) requireOneRunPerCheckpoint() {
	g.t.Helper()
	type key struct {
		job string
		id  uint64
	}
	by := map[key]*proc{}
	twice := 0
	for _, p := range g.runs {
		for _, l := range logLines[checkpointLine](g.job, msgCheckpointDone, p) {
			k := key{l.Job, l.Checkpoint}
			if q, ok := by[k]; ok && q != p {
				if twice++; twice <= 5 {
					g.t.Errorf("checkpoint %d of %s was completed by %s and by %s", l.Checkpoint, l.Job, q, p)
				}
			}
			by[k] = p
		}
	}
	g.t.Logf("%d checkpoints of the slots completed over %d runs, %d of them by two runs", len(by), len(g.runs), twice)
}

// visibleSlots maps each id visible in the file sink's committed files to
// the slot whose job committed it, from the file names (the file sink's
// doc: part-<job>-<checkpoint>-w<writer>-<i>.<ext>, the job being
// <name>.slot-<k>). It reads the output first.
func (g *groupJob) visibleSlots() map[int64]int {
	g.t.Helper()
	r, ok := g.out.(*outputReader)
	if !ok {
		g.t.Fatalf("harness: visibleSlots reads the file sink's output only")
	}
	if _, err := r.read(); err != nil {
		g.t.Fatalf("read output: %v", err)
	}
	re := regexp.MustCompile(`^part-` + regexp.QuoteMeta(g.name) + `\.slot-(\d+)-\d{12,}-w\d+-\d+\.jsonl$`)
	slots := map[int64]int{}
	for path, pf := range r.cache {
		m := re.FindStringSubmatch(filepath.Base(path))
		if m == nil {
			g.t.Fatalf("visible file %s is not named as a slot's committed file", path)
		}
		k, _ := strconv.Atoi(m[1])
		for _, id := range pf.ids {
			slots[id] = k
		}
	}
	return slots
}
