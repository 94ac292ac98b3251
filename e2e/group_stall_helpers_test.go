package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// Timing a group's handovers
//
// When a member is stopped by a signal, each slot it ran stalls until its
// new member commits it again. The stall of a slot is read from the log
// lines of the members ("checkpoint completed" with job=<name>.slot-<k>,
// and "slot released", "slots assigned", "slot ready" for where the time
// went), not guessed from polling.

// departure is a member stopped by a signal: which, when it was sent, and
// the slots the member ran then.
type departure struct {
	sig   string // "SIGKILL" or "SIGTERM"
	from  *proc
	at    time.Time
	slots []int
}

// killMember SIGKILLs p and returns the departure.
func (g *groupJob) killMember(p *proc) departure {
	g.t.Helper()
	d := departure{sig: "SIGKILL", from: p, slots: g.slotsOf(p), at: time.Now()}
	g.kill(p)
	g.drop(p)
	return d
}

// terminateMember SIGTERMs p, requires exit 0 within a minute and returns
// the departure.
func (g *groupJob) terminateMember(p *proc) departure {
	g.t.Helper()
	d := departure{sig: "SIGTERM", from: p, slots: g.slotsOf(p), at: time.Now()}
	g.terminate(p, time.Minute)
	g.drop(p)
	return d
}

// stall is one slot's handover after a departure: its new member, the
// time from the signal to the first checkpoint the new member's slot job
// completed (its first commit of the slot's output), and the gap in the
// slot's commits: from the last checkpoint the old member completed of the
// slot (before the kill, or the final one after SIGTERM) to that first
// one.
type stall struct {
	slot        int
	to          *proc
	afterSignal time.Duration
	gap         time.Duration // -1 if the slot had no checkpoint before
}

// checkpointLine is the contract's "checkpoint completed" log line: whose
// job, which checkpoint and when.
type checkpointLine struct {
	Job        string    `json:"job"`
	Checkpoint uint64    `json:"checkpoint"`
	Time       time.Time `json:"time"`
}

// stalls times the handover of each of d's slots to its member in owners
// (the group settled since d), waiting up to 30s for the new member's
// first completed checkpoint of the slot; it logs one line for d.
func (g *groupJob) stalls(d departure, owners map[int]*proc) []stall {
	g.t.Helper()
	var out []stall
	var notes []string
	for _, k := range d.slots {
		to, job := owners[k], g.slotJob(k)
		var first time.Time
		g.pollUntil(to, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
			for _, l := range logLines[checkpointLine](g.job, msgCheckpointDone, to) {
				if l.Job == job && l.Time.After(d.at) {
					first = l.Time
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s completed no checkpoint of %s since the %s of %s", to, job, d.sig, d.from)
		})
		// The slot's previous commit, by whichever run made it: the old
		// member's last (its final one after SIGTERM), or, if it was
		// killed before it completed one, the member's before it.
		var last time.Time
		var lastBy *proc
		for _, p := range g.runs {
			for _, l := range logLines[checkpointLine](g.job, msgCheckpointDone, p) {
				if l.Job == job && l.Time.Before(first) && l.Time.After(last) {
					last, lastBy = l.Time, p
				}
			}
		}
		s := stall{slot: k, to: to, afterSignal: first.Sub(d.at), gap: -1}
		gap := "no checkpoint of it before"
		if lastBy != nil {
			s.gap = first.Sub(last)
			gap = fmt.Sprintf("%v after its previous checkpoint (by %s)", s.gap.Round(time.Millisecond), lastBy)
		}
		out = append(out, s)
		notes = append(notes, fmt.Sprintf("slot %d to %s: %v after the signal (%s), %s",
			k, to, s.afterSignal.Round(time.Millisecond), g.handoverPhases(d, k, to, first), gap))
	}
	g.t.Logf("%s %s: first checkpoint by the new member: %s", d.sig, d.from, strings.Join(notes, "; "))
	return out
}

// slotLogLine is a member's log line about its slots: "slot released",
// "slots assigned", "slot ready".
type slotLogLine struct {
	Slot  *int      `json:"slot"`
	Slots []int     `json:"slots"`
	Time  time.Time `json:"time"`
}

// handoverPhases says when, after d's signal, the old member released
// slot k (SIGTERM), the group assigned it to the new member to, to had it
// ready (locked, restored, positioned) and completed its first checkpoint
// of it (at first): where a stall's time went.
func (g *groupJob) handoverPhases(d departure, k int, to *proc, first time.Time) string {
	after := func(from time.Time, p *proc, msg string, match func(slotLogLine) bool) time.Time {
		for _, l := range logLines[slotLogLine](g.job, msg, p) {
			if l.Time.After(from) && match(l) {
				return l.Time
			}
		}
		return time.Time{}
	}
	isK := func(l slotLogLine) bool { return l.Slot != nil && *l.Slot == k }
	var phases []string
	mark := func(what string, at time.Time) {
		if at.IsZero() {
			phases = append(phases, what+" not logged")
			return
		}
		phases = append(phases, fmt.Sprintf("%s +%v", what, at.Sub(d.at).Round(time.Millisecond)))
	}
	if d.sig == "SIGTERM" {
		mark("released", after(d.at, d.from, "slot released", isK))
	}
	assigned := after(d.at, to, "slots assigned", func(l slotLogLine) bool { return slices.Contains(l.Slots, k) })
	mark("assigned", assigned)
	if !assigned.IsZero() {
		mark("ready", after(assigned, to, "slot ready", isK))
	}
	mark("first checkpoint", first)
	return strings.Join(phases, ", ")
}

// stallSummary is one line over stalls: how many, and the least, median
// and largest of each measure (the gap where the slot had a checkpoint
// before).
func stallSummary(ss []stall) string {
	if len(ss) == 0 {
		return "none"
	}
	stats := func(f func(stall) time.Duration) string {
		var ds []time.Duration
		for _, s := range ss {
			if d := f(s); d >= 0 {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			return "none measured"
		}
		slices.Sort(ds)
		return fmt.Sprintf("min %v median %v max %v (of %d)", ds[0].Round(time.Millisecond),
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
	}
	return fmt.Sprintf("%d slot handovers: signal to the new member's first checkpoint %s; gap in the slot's commits %s",
		len(ss), stats(func(s stall) time.Duration { return s.afterSignal }), stats(func(s stall) time.Duration { return s.gap }))
}
