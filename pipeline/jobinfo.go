package pipeline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/source"
)

// processStart is when this process started (package pipeline was
// initialised): the origin of JobInfo's uptime.
var processStart = time.Now()

// JobInfo is what /api/job shows about the job: what it is (name, config),
// how it runs (state, restarts, uptime) and how far it is (records in and
// out, consumer lag per partition, the last completed checkpoint).
//
// The counters only grow over the process's life: a client computes rates
// from two JobInfos, dividing the difference of a counter by that of At.
type JobInfo struct {
	Name string `json:"name"`
	// Version is the connector's version; Info leaves it empty for the
	// caller (the binary knows it) to fill.
	Version string `json:"version,omitempty"`
	// State is "starting" (before the first attempt runs), "running",
	// "restarting" (after a failure: restoring from the last completed
	// checkpoint, or waiting out the backoff), "stopping" (asked to stop:
	// taking the final checkpoint) or "stopped" (Run returned).
	State string `json:"state"`
	// At is when these values were read.
	At            time.Time `json:"at"`
	StartedAt     time.Time `json:"started_at"` // when the process started
	UptimeSeconds float64   `json:"uptime_seconds"`
	Restarts      int64     `json:"restarts"`
	// RecordsInTotal: records read from the source; RecordsOutTotal:
	// records written to the sink (connector_records_in_total and
	// connector_records_out_total).
	RecordsInTotal  int64 `json:"records_in_total"`
	RecordsOutTotal int64 `json:"records_out_total"`
	// LagRecords is the sum of the partitions' lag.
	LagRecords int64 `json:"lag_records"`
	// Partitions are those the running attempt's readers own, sorted by
	// topic and partition; empty between attempts, and for a source that
	// cannot tell its lag (source.Lagger).
	Partitions []PartitionInfo `json:"partitions"`
	// LastCompleted is the last completed checkpoint: its Offsets are the
	// positions committed to the source (Kafka: to the consumer group).
	LastCompleted *Completion `json:"last_completed,omitempty"`
	// Config is the effective config (defaults filled in) with every secret
	// written as "***", as `connector validate --print` shows it; a YAML
	// mapping as a JSON object, its keys in the YAML's order.
	Config json.RawMessage `json:"config,omitempty"`
	// ConfigError says why Config is missing (it could not be written).
	ConfigError string `json:"config_error,omitempty"`
}

// PartitionInfo is one partition a reader of the running attempt owns.
type PartitionInfo struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LagRecords is the partition's end offset (Kafka: the high watermark)
	// minus the reader's next offset, as of its last fetch (source.Lag).
	LagRecords int64 `json:"lag_records"`
	// NextOffset is the offset the reader reads next; EndOffset the end
	// (high watermark) it last saw. The offsets committed at the last
	// completed checkpoint are JobInfo.LastCompleted.Offsets.
	NextOffset int64 `json:"next_offset"`
	EndOffset  int64 `json:"end_offset"`
	// Slot is the slot the partition is in, in group mode (package group).
	Slot *int `json:"slot,omitempty"`
}

// Job states, as JobInfo.State says them.
const (
	stateStarting   = "starting"
	stateRunning    = "running"
	stateRestarting = "restarting"
	stateStopping   = "stopping" // asked to stop: taking the final checkpoint
	stateStopped    = "stopped"  // Run returned
)

// State is JobInfo.State, alone (cheap); safe from any goroutine.
func (j *Job) State() string {
	switch {
	case j.stopped.Load():
		return stateStopped
	case j.stopping.Load():
		return stateStopping
	case j.health.running.Load():
		return stateRunning
	case counterValue(j.metrics.restarts) > 0:
		return stateRestarting
	}
	return stateStarting
}

// Info returns what /api/job shows. Safe from any goroutine, at any time
// (before, during and after Run); it takes a few locks and allocates, so
// it suits a status page, not a hot path.
func (j *Job) Info() JobInfo {
	now := time.Now()
	info := JobInfo{
		Name:            j.cfg.Name,
		State:           j.State(),
		At:              now.UTC(),
		StartedAt:       processStart.UTC(),
		UptimeSeconds:   now.Sub(processStart).Seconds(),
		Restarts:        int64(counterValue(j.metrics.restarts)),
		RecordsInTotal:  int64(counterValue(j.metrics.recordsIn)),
		RecordsOutTotal: int64(counterValue(j.metrics.recordsOut)),
		Partitions:      []PartitionInfo{},
		LastCompleted:   j.last.Load(),
	}
	for _, l := range j.metrics.attempt.currentLag() {
		info.Partitions = append(info.Partitions, PartitionInfo{Topic: l.Topic, Partition: l.Partition, LagRecords: l.Records, NextOffset: l.Next, EndOffset: l.End})
		info.LagRecords += l.Records
	}
	slices.SortFunc(info.Partitions, func(a, b PartitionInfo) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	cfg, err := j.redactedConfig()
	if err != nil {
		info.ConfigError = err.Error()
	}
	info.Config = cfg
	return info
}

// redactedConfig is the job's config as `validate --print` writes it
// (config.Job.Dump: secrets as "***"), as JSON whose objects keep the
// order of the YAML's keys (name, kafka, source...).
func (j *Job) redactedConfig() (json.RawMessage, error) { return RedactedConfig(j.cfg) }

// RedactedConfig is cfg as JobInfo.Config shows it: as `validate --print`
// writes it, secrets as "***", as JSON whose objects keep the YAML's order.
func RedactedConfig(cfg *config.Job) (json.RawMessage, error) {
	dump, err := cfg.Dump()
	if err != nil {
		return nil, fmt.Errorf("write the config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(dump, &doc); err != nil {
		return nil, fmt.Errorf("read back the written config: %w", err)
	}
	var b bytes.Buffer
	if err := yamlToJSON(&b, &doc); err != nil {
		return nil, fmt.Errorf("config as JSON: %w", err)
	}
	return b.Bytes(), nil
}

// yamlToJSON writes n to b as JSON, mappings as objects in their order,
// scalars with the types YAML resolves them to.
func yamlToJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("a document of %d nodes", len(n.Content))
		}
		return yamlToJSON(b, n.Content[0])
	case yaml.AliasNode:
		return yamlToJSON(b, n.Alias)
	case yaml.MappingNode:
		return yamlItemsToJSON(b, "{", "}", n.Content, 2)
	case yaml.SequenceNode:
		return yamlItemsToJSON(b, "[", "]", n.Content, 1)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.Write(enc)
		return nil
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

// yamlItemsToJSON writes a sequence's items (step 1) or a mapping's keys
// and values (step 2) between open and end.
func yamlItemsToJSON(b *bytes.Buffer, open, end string, items []*yaml.Node, step int) error {
	b.WriteString(open)
	for i := 0; i+step <= len(items); i += step {
		if i > 0 {
			b.WriteByte(',')
		}
		if step == 2 {
			key, _ := json.Marshal(items[i].Value) // a string always marshals
			b.Write(key)
			b.WriteByte(':')
		}
		if err := yamlToJSON(b, items[i+step-1]); err != nil {
			return err
		}
	}
	b.WriteString(end)
	return nil
}

// currentLag is the running attempt's consumer lag (source.Lagger), nil between
// attempts or when its source cannot tell. Like Collect, it holds m.mu, so
// it never reads a source the attempt has closed.
func (m *attemptMetrics) currentLag() []source.Lag {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return nil
	}
	if l, ok := m.cur.source.(source.Lagger); ok {
		return l.Lag()
	}
	return nil
}
