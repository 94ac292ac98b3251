package kafka

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/source"
)

// position is what a reader records at a barrier: the next offset of each
// partition it owns, the leader epoch of the batch that offset follows,
// and the ID of each topic (Kafka's topic ID, KIP-516), so that a restore
// can tell a topic deleted and recreated under the same name, whose offsets
// mean nothing any more, and a log truncated below the offset (epoch.go).
type position struct {
	Offsets  Offsets           `json:"offsets"`
	Epochs   Offsets           `json:"epochs,omitempty"`    // partition -> leader epoch; absent where unknown (versions before, old message formats)
	TopicIDs map[string]string `json:"topic_ids,omitempty"` // name -> ID (base64); absent when the broker has none
}

// encodePosition writes a reader's position.
func encodePosition(o, epochs Offsets, ids map[string]kadm.TopicID) (source.Position, error) {
	p := position{Offsets: o, TopicIDs: map[string]string{}}
	if epochs.Len() > 0 {
		p.Epochs = epochs
	}
	for t := range o {
		if id, ok := ids[t]; ok && id != (kadm.TopicID{}) {
			p.TopicIDs[t] = id.String()
		}
	}
	return json.Marshal(p)
}

// decodePosition reads what encodePosition wrote, and the bare offsets map
// that versions before topic IDs wrote (its IDs are then unknown).
func decodePosition(b []byte) (position, error) {
	var p position
	if len(b) == 0 {
		return position{Offsets: Offsets{}}, nil
	}
	if bytes.Contains(b, []byte(`"offsets"`)) {
		if err := json.Unmarshal(b, &p); err == nil && p.Offsets != nil {
			return p, nil
		}
	}
	o, err := DecodeOffsets(b)
	if err != nil {
		return p, err
	}
	return position{Offsets: o}, nil
}

// mergePositions decodes the readers' positions of one checkpoint and
// merges them: each partition is owned by one reader, so none collides.
func mergePositions(positions []source.Position) (position, error) {
	out := position{Offsets: Offsets{}, Epochs: Offsets{}, TopicIDs: map[string]string{}}
	for _, b := range positions {
		p, err := decodePosition(b)
		if err != nil {
			return out, err
		}
		out.Offsets.Merge(p.Offsets)
		out.Epochs.Merge(p.Epochs)
		for t, id := range p.TopicIDs {
			if prev, ok := out.TopicIDs[t]; ok && prev != id {
				return out, fmt.Errorf("decode source positions: topic %s has two IDs in one checkpoint (%s, %s)", t, prev, id)
			}
			out.TopicIDs[t] = id
		}
	}
	return out, nil
}

// lookup is the restored offset of a partition; false for a nil position.
func (p *position) lookup(topic string, partition int32) (int64, bool) {
	if p == nil {
		return 0, false
	}
	return p.Offsets.Lookup(topic, partition)
}
