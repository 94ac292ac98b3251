package group

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/connector-dev/connector/pipeline"
)

// Info is what /api/job shows of a member: the group, this member's place
// in it and each slot it runs, with that slot's job.
type Info struct {
	Mode string `json:"mode"` // "group"
	Name string `json:"name"`
	// Version is the connector's version, for the caller to fill.
	Version string `json:"version,omitempty"`
	Group   string `json:"group"` // the group's id, also its slot topic
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

// Info returns the member's Info; safe from any goroutine.
func (m *Member) Info() Info {
	in := Info{Mode: "group", Name: m.cfg.Name, Group: m.topic, Generation: -1, Slots: m.cfg.Instances.Slots, Owned: []SlotInfo{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client != nil {
		in.Member, in.Generation = m.client.GroupMetadata()
	}
	for _, k := range slices.Sorted(maps.Keys(m.slots)) {
		s := m.slots[k]
		si := SlotInfo{Slot: k, State: s.state()}
		if j := s.job.Load(); j != nil {
			info := j.Info()
			info.Config = nil // the member's config is the job's; each slot's adds only its name
			si.Job = &info
		}
		in.Owned = append(in.Owned, si)
	}
	return in
}

// Status is what /api/checkpoints shows: each slot's job's status.
func (m *Member) Status() map[string]pipeline.Status {
	out := map[string]pipeline.Status{}
	for k, j := range m.jobs() {
		out[fmt.Sprint(k)] = j.Status()
	}
	return out
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
	cl := m.client
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
	if _, gen := cl.GroupMetadata(); gen < 0 {
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
