package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// Offsets: Kafka's and the checkpoint's

// committedOffsets returns the group's committed offset of every partition
// of topic.
func committedOffsets(t testing.TB, b kafkatest.Brokers, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resps, err := kafkatest.Admin(t, b).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	got := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.Err != nil {
			t.Fatalf("fetch offsets of group %s, %s/%d: %v", group, topic, p, r.Err)
		}
		got[p] = r.At
	}
	return got
}

// endOffsets returns the end offset (high watermark) of every partition of
// topic.
func endOffsets(t testing.TB, b kafkatest.Brokers, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := kafkatest.Admin(t, b).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	got := map[int32]int64{}
	for p, o := range listed[topic] {
		if o.Err != nil {
			t.Fatalf("list end offsets of %s/%d: %v", topic, p, o.Err)
		}
		got[p] = o.Offset
	}
	return got
}

// waitCheckpointAtEnd polls /api/checkpoints until the last checkpoint p
// completed holds, as its source offsets, the end of every partition of the
// job's topic as they are now: every record produced so far went through a
// completed checkpoint (its output is committed, the state it wrote is in
// the checkpoint's snapshot). Call it once nothing more is being produced.
// It fails the test when p ends or timeout passes.
func (j *job) waitCheckpointAtEnd(p *proc, timeout time.Duration) {
	j.t.Helper()
	ends := endOffsets(j.t, j.brokers, j.topic)
	t0 := time.Now()
	deadline := t0.Add(timeout)
	last := "none"
	for {
		id, offsets, err := p.lastCompleted()
		if err == nil && id > 0 {
			last = fmt.Sprintf("checkpoint %d at %s", id, offsets)
			if cp, err := checkpointOffsets([]byte(offsets), j.topic); err == nil && atEnds(cp, ends) {
				j.t.Logf("%s: checkpoint %d covers the partition ends %v, %v after the wait began",
					p, id, sorted(ends), time.Since(t0).Round(time.Millisecond))
				return
			}
		} else if err != nil {
			last = err.Error()
		}
		j.requireRunning(p, "waiting for a checkpoint at the partition ends")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: no completed checkpoint at the partition ends %v within %v (last: %s)", p, sorted(ends), timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastCompleted asks /api/checkpoints for the last checkpoint the run
// completed: its id (0 if none yet) and source offsets as text
// ("<topic>/0=12 <topic>/1=40").
func (p *proc) lastCompleted() (uint64, string, error) {
	code, body, err := p.get("/api/checkpoints")
	if err != nil {
		return 0, "", err
	}
	if code != http.StatusOK {
		return 0, "", fmt.Errorf("/api/checkpoints: HTTP %d: %s", code, body)
	}
	var st struct {
		LastCompleted *struct {
			ID      uint64 `json:"id"`
			Offsets string `json:"offsets"`
		} `json:"last_completed"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return 0, "", fmt.Errorf("/api/checkpoints: %v: %s", err, body)
	}
	if st.LastCompleted == nil {
		return 0, "", nil
	}
	return st.LastCompleted.ID, st.LastCompleted.Offsets, nil
}

// atEnds reports whether offsets are ends for every partition (a partition
// the offsets leave out counts as 0).
func atEnds(offsets, ends map[int32]int64) bool {
	for p, end := range ends {
		if offsets[p] != end {
			return false
		}
	}
	return true
}

// checkpointOffsets finds the source offsets of topic in the output of
// `connector checkpoints show`. That output's shape is not fixed yet, so
// this looks for the offsets wherever they are:
//
//   - JSON, anywhere in the tree: {"<topic>": {"0": 12, "1": 40}} (the
//     source's Offsets), or objects {"topic": T, "partition": P, "offset": O}
//     ("next_offset" also accepted); strings holding base64 of JSON (a
//     snapshot's raw Data) are decoded and searched too;
//   - text: "<topic>/0=12 <topic>/1=40" (Offsets.String).
//
// The sets found are merged (the offsets are split over the source tasks);
// two different offsets for one partition are an error (ambiguous output),
// as is finding none.
func checkpointOffsets(out []byte, topic string) (map[int32]int64, error) {
	var found []map[int32]int64
	var root any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&root); err == nil {
		found = findOffsets(root, topic, found)
	}
	if len(found) == 0 {
		re := regexp.MustCompile(regexp.QuoteMeta(topic) + `/(\d+)=(\d+)`)
		m := map[int32]int64{}
		for _, sm := range re.FindAllSubmatch(out, -1) {
			p, _ := strconv.ParseInt(string(sm[1]), 10, 32)
			o, _ := strconv.ParseInt(string(sm[2]), 10, 64)
			m[int32(p)] = o
		}
		if len(m) > 0 {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no offsets of topic %s in the output", topic)
	}
	merged := map[int32]int64{}
	for _, f := range found {
		for p, o := range f {
			if prev, ok := merged[p]; ok && prev != o {
				return nil, fmt.Errorf("ambiguous: offsets %d and %d for %s/%d in the output", prev, o, topic, p)
			}
			merged[p] = o
		}
	}
	return merged, nil
}

func findOffsets(v any, topic string, found []map[int32]int64) []map[int32]int64 {
	switch v := v.(type) {
	case map[string]any:
		if m, ok := partitionMap(v[topic]); ok {
			found = append(found, m)
		}
		if v["topic"] == topic {
			p, okP := jsonInt(v["partition"])
			o, okO := jsonInt(v["offset"])
			if !okO {
				o, okO = jsonInt(v["next_offset"])
			}
			if okP && okO {
				found = append(found, map[int32]int64{int32(p): o})
			}
		}
		for k, child := range v {
			if k == "epochs" {
				continue // a source position's leader epochs, by topic and partition: not offsets
			}
			found = findOffsets(child, topic, found)
		}
	case []any:
		// A list of {"topic","partition","offset"} objects is one set.
		merged := map[int32]int64{}
		var rest []map[int32]int64
		for _, child := range v {
			for _, m := range findOffsets(child, topic, nil) {
				if len(m) == 1 && isEntry(child, topic) {
					maps.Copy(merged, m)
				} else {
					rest = append(rest, m)
				}
			}
		}
		if len(merged) > 0 {
			found = append(found, merged)
		}
		found = append(found, rest...)
	case string:
		if len(v) >= 8 {
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil && json.Valid(raw) {
				var inner any
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				if dec.Decode(&inner) == nil {
					found = findOffsets(inner, topic, found)
				}
			}
		}
	}
	return found
}

func isEntry(v any, topic string) bool {
	m, ok := v.(map[string]any)
	return ok && m["topic"] == topic
}

// partitionMap reads {"0": 12, "1": 40}.
func partitionMap(v any) (map[int32]int64, bool) {
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		return nil, false
	}
	m := map[int32]int64{}
	for k, x := range obj {
		p, err := strconv.ParseInt(k, 10, 32)
		o, ok := jsonInt(x)
		if err != nil || !ok {
			return nil, false
		}
		m[int32(p)] = o
	}
	return m, true
}

func jsonInt(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), v == float64(int64(v))
	}
	return 0, false
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if x, ok := b[p]; !ok || x != o {
			return false
		}
	}
	return true
}
