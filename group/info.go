package group

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/connector-dev/connector/pipeline"
)

// Info is what /api/job shows of a member: a pipeline.JobInfo over the
// slots it runs (so that what reads a single job's reads a member's: the
// counters are the process's, summed over every slot it ran; the
// partitions are its slots' with their slot; the last completed checkpoint
// is the newest of any slot; the config is the job's), and the group: this
// member's place in it and each slot it runs, with that slot's job.
type Info struct {
	pipeline.JobInfo
	Mode  string `json:"mode"`  // "group"
	Group string `json:"group"` // the group's id, also its slot topic
	// Member and Generation are this process's member id and the group's
	// generation as this member last joined it ("" and -1 before).
	Member     string     `json:"member"`
	Generation int32      `json:"generation"`
	Slots      int        `json:"slots_total"`
	Owned      []SlotInfo `json:"slots"`
}

// SlotInfo is one slot this member runs.
type SlotInfo struct {
	Slot int `json:"slot"`
	// State is "waiting for its lock" (another process has not released
	// it yet), "stopping", or the slot's job's state.
	State string            `json:"state"`
	Job   *pipeline.JobInfo `json:"job,omitempty"`
}

// retired are the counters of the slots this member ran and stopped, so
// that Info's and Status's counters only grow over the process's life.
type retired struct {
	in, out, restarts int64
	counts            pipeline.Counts
}

// add adds a stopped slot's job's counters; m.mu held.
func (r *retired) add(info pipeline.JobInfo, st pipeline.Status) {
	r.in += info.RecordsInTotal
	r.out += info.RecordsOutTotal
	r.restarts += info.Restarts
	r.counts.Completed += st.Counts.Completed
	r.counts.Failed += st.Counts.Failed
}

// Member states besides a job's: given no slot, or not in the group yet.
const (
	stateIdle     = "idle"
	stateStarting = "starting"
)

// Info returns the member's Info; safe from any goroutine.
func (m *Member) Info() Info {
	now := time.Now()
	in := Info{
		JobInfo: pipeline.JobInfo{
			Name: m.cfg.Name, State: stateStarting, At: now.UTC(), StartedAt: processStart.UTC(),
			UptimeSeconds: now.Sub(processStart).Seconds(), Partitions: []pipeline.PartitionInfo{},
		},
		Mode: "group", Group: m.topic, Generation: -1, Slots: m.cfg.Instances.Slots, Owned: []SlotInfo{},
	}
	if cfg, err := pipeline.RedactedConfig(m.cfg); err != nil {
		in.ConfigError = err.Error()
	} else {
		in.Config = cfg
	}
	m.mu.Lock()
	cl, slots, r := m.client, maps.Clone(m.slots), m.retired
	m.mu.Unlock()
	in.RecordsInTotal, in.RecordsOutTotal, in.Restarts = r.in, r.out, r.restarts
	if cl != nil {
		in.Member, in.Generation = cl.GroupMetadata()
		if in.Generation >= 0 {
			in.State = stateIdle
		}
	}
	states := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(slots)) {
		s := slots[k]
		si := SlotInfo{Slot: k, State: s.state()}
		states[si.State] = true
		if j := s.job.Load(); j != nil {
			info := j.Info()
			info.Config = nil // the member's config is the job's; a slot's adds only its name and directories
			si.Job = &info
			in.RecordsInTotal += info.RecordsInTotal
			in.RecordsOutTotal += info.RecordsOutTotal
			in.Restarts += info.Restarts
			in.LagRecords += info.LagRecords
			for _, p := range info.Partitions {
				p.Slot = &si.Slot
				in.Partitions = append(in.Partitions, p)
			}
			if c := info.LastCompleted; c != nil && (in.LastCompleted == nil || c.CompletedAt.After(in.LastCompleted.CompletedAt)) {
				in.LastCompleted = c
			}
		}
		in.Owned = append(in.Owned, si)
	}
	switch {
	case len(states) == 1:
		in.State = in.Owned[0].State // every slot says the same
	case states["running"]:
		in.State = "running" // some still start, stop or wait: Owned says which
	case len(states) > 1:
		in.State = stateStarting // none runs yet: Owned says what each does
	}
	slices.SortFunc(in.Partitions, func(a, b pipeline.PartitionInfo) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return in
}

// processStart is when this process started, for Info's uptime.
var processStart = time.Now()

// Status is what /api/checkpoints shows: a pipeline.Status of the member
// (its readiness and liveness), the checkpoints of every slot it runs, the
// newest first and each with its slot, and counts over every slot it ran.
func (m *Member) Status() pipeline.Status {
	st := pipeline.Status{Ready: true, Live: true, History: []pipeline.CheckpointRecord{}}
	if err := m.Ready(); err != nil {
		st.Ready, st.NotReady = false, err.Error()
	}
	if err := m.Live(); err != nil {
		st.Live, st.NotLive = false, err.Error()
	}
	m.mu.Lock()
	st.Counts = m.retired.counts
	m.mu.Unlock()
	longest := 0
	for k, j := range m.jobs() {
		js := j.Status()
		st.Counts.Completed += js.Counts.Completed
		st.Counts.Failed += js.Counts.Failed
		if c := js.LastCompleted; c != nil && (st.LastCompleted == nil || c.CompletedAt.After(st.LastCompleted.CompletedAt)) {
			st.LastCompleted = c
		}
		longest = max(longest, len(js.History))
		for _, c := range js.History {
			c.Slot = &k
			st.History = append(st.History, c)
		}
	}
	slices.SortStableFunc(st.History, func(a, b pipeline.CheckpointRecord) int { return b.TriggeredAt.Compare(a.TriggeredAt) })
	st.History = st.History[:min(len(st.History), longest)] // as long as one job's
	return st
}

// jobs returns the running slots' jobs by slot.
func (m *Member) jobs() map[int]*pipeline.Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]*pipeline.Job{}
	for k, s := range m.slots {
		if j := s.job.Load(); j != nil {
			out[k] = j
		}
	}
	return out
}

// Ready is nil once the member joined the group and every slot it runs is
// ready (a member given no slot, more processes than slots, is ready and
// idle); else why not.
func (m *Member) Ready() error {
	m.mu.Lock()
	cl, inGroup := m.client, m.inGroup
	var waiting []int
	for k, s := range m.slots {
		if s.job.Load() == nil {
			waiting = append(waiting, k)
		}
	}
	m.mu.Unlock()
	if cl == nil {
		return errors.New("setting up the job's slot topic")
	}
	if _, gen := cl.GroupMetadata(); gen < 0 || !inGroup {
		return fmt.Errorf("joining the job's group %s", m.topic)
	}
	var errs []error
	slices.Sort(waiting)
	for _, k := range waiting {
		errs = append(errs, fmt.Errorf("slot %d: waiting for its previous owner to release it", k))
	}
	jobs := m.jobs()
	for _, k := range slices.Sorted(maps.Keys(jobs)) {
		if err := jobs[k].Ready(); err != nil {
			errs = append(errs, fmt.Errorf("slot %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// Live is nil unless a slot's job is wedged (pipeline.Job.Live).
func (m *Member) Live() error {
	var errs []error
	jobs := m.jobs()
	for _, k := range slices.Sorted(maps.Keys(jobs)) {
		if err := jobs[k].Live(); err != nil {
			errs = append(errs, fmt.Errorf("slot %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
