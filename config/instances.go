package config

import (
	"time"

	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/spec"
)

// Instances says whether one process runs the whole job (single, the
// default) or several processes share it through a Kafka consumer group
// (group; package group).
//
// In group mode the job's partitions are split into Slots fixed slots
// (partition p of every topic is in slot p mod Slots); the group assigns
// slots to processes, and each slot is run as a job of its own, named
// <name>.slot-<k>, with its own checkpoints, keyed state, consumer group
// and sink identity under checkpoint.dir and state.dir, which every
// process must share (the same directories, on one host or a shared
// filesystem): a slot moves between processes through them.
type Instances struct {
	Mode InstancesMode `yaml:"mode" default:"single" doc:"single: this process runs the whole job | group: processes with this config share the job's slots through a Kafka consumer group"`
	// Slots is the number of slots: the most processes that can share the
	// work. It cannot change once the job has run in group mode (each
	// slot's checkpoints hold its partitions).
	Slots int `yaml:"slots" default:"8" doc:"group mode: slots the partitions are split into (partition p in slot p mod slots); the most processes that get work; cannot change later"`
	// SessionTimeout is how long the group waits for a silent process
	// before its slots move: the stall after a process dies. Kafka's
	// default is 45s; the broker allows 6s to 30m by default.
	SessionTimeout time.Duration `yaml:"session_timeout" default:"10s" doc:"group mode: how long a process may be silent before its slots move to the others"`
	// Protocol is the group protocol: classic (JoinGroup/SyncGroup, with
	// the cooperative-sticky assignor) or consumer (KIP-848, the broker
	// assigns; Kafka 4.0+, recommended from 4.3). With consumer, the
	// session timeout and heartbeat interval are the broker's
	// (group.consumer.session.timeout.ms, 45s, and
	// group.consumer.heartbeat.interval.ms, 5s, by default), not
	// SessionTimeout: slots move more slowly unless the broker's are lowered.
	Protocol GroupProtocol `yaml:"protocol" default:"classic" doc:"group mode: classic (cooperative-sticky) | consumer (KIP-848, Kafka >= 4.3)"`
}

// InstancesMode is instances.mode.
type InstancesMode string

// Instance modes.
const (
	InstancesSingle InstancesMode = "single"
	InstancesGroup  InstancesMode = "group"
)

// Enum lists the values a file may give (for the JSON Schema).
func (InstancesMode) Enum() []string {
	return []string{string(InstancesSingle), string(InstancesGroup)}
}

// GroupProtocol is instances.protocol.
type GroupProtocol string

// Group protocols.
const (
	GroupClassic  GroupProtocol = "classic"
	GroupConsumer GroupProtocol = "consumer"
)

// Enum lists the values a file may give (for the JSON Schema).
func (GroupProtocol) Enum() []string { return []string{string(GroupClassic), string(GroupConsumer)} }

// Group reports whether the job runs in group mode.
func (i *Instances) Group() bool { return i.Mode == InstancesGroup }

// maxSlots bounds instances.slots: each slot a process owns is a job with
// its own workers, clients and files.
const maxSlots = 1024

// Validate checks the keys.
func (i *Instances) Validate(p *Problems) {
	spec.OneOf(p, "mode", "instances mode", i.Mode, InstancesSingle, InstancesGroup)
	spec.OneOf(p, "protocol", "group protocol", i.Protocol, GroupClassic, GroupConsumer)
	p.Between("slots", i.Slots, 1, maxSlots)
	if i.SessionTimeout < time.Second || i.SessionTimeout > 30*time.Minute {
		p.Add("session_timeout", "%v: must be between 1s and 30m (the broker's group.min/max.session.timeout.ms, 6s and 30m by default, apply too)", i.SessionTimeout)
	}
}

// slotSuffixLen is the most a slot adds to the job's name: ".slot-1023".
const slotSuffixLen = len(".slot-1023")

// validateInstances checks what group mode needs of the rest of the job.
func (j *Job) validateInstances(p *Problems) {
	if !j.Instances.Group() {
		return
	}
	if len(j.Name) > maxNameLen-slotSuffixLen {
		p.Add("name", "is longer than %d characters: with instances.mode: group each slot is a job named <name>.slot-<k>", maxNameLen-slotSuffixLen)
	}
	if t := j.Source.Type; t != "" && t != "kafka" {
		p.Add("source.type", "%q: instances.mode: group splits the kafka source's partitions into slots; other sources cannot be shared yet", t)
	}
	if j.Checkpoint.Storage != "" {
		p.Add("checkpoint.storage", "%q: instances.mode: group fences a slot's owner by a lock in checkpoint.dir, which object storage has no equivalent of yet; share checkpoint.dir and state.dir between the processes instead (a shared filesystem)", secret.RedactURL(j.Checkpoint.Storage))
	}
}
