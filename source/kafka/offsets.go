package kafka

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Offsets maps topic -> partition -> the next offset to read.
type Offsets map[string]map[int32]int64

// Set records the next offset of one partition.
func (o Offsets) Set(topic string, partition int32, next int64) {
	ps := o[topic]
	if ps == nil {
		ps = make(map[int32]int64)
		o[topic] = ps
	}
	ps[partition] = next
}

// Lookup returns the next offset of one partition.
func (o Offsets) Lookup(topic string, partition int32) (int64, bool) {
	n, ok := o[topic][partition]
	return n, ok
}

// Delete forgets one partition.
func (o Offsets) Delete(topic string, partition int32) {
	if ps := o[topic]; ps != nil {
		delete(ps, partition)
		if len(ps) == 0 {
			delete(o, topic)
		}
	}
}

// Clone returns a deep copy.
func (o Offsets) Clone() Offsets {
	c := make(Offsets, len(o))
	for t, ps := range o {
		for p, n := range ps {
			c.Set(t, p, n)
		}
	}
	return c
}

// Merge copies every entry of other into o.
func (o Offsets) Merge(other Offsets) {
	for t, ps := range other {
		for p, n := range ps {
			o.Set(t, p, n)
		}
	}
}

// Len is the number of partitions.
func (o Offsets) Len() int {
	n := 0
	for _, ps := range o {
		n += len(ps)
	}
	return n
}

// String lists partitions in order, for logs and `checkpoints show`.
func (o Offsets) String() string {
	s := ""
	for i, x := range sortedPartitions(o) {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s/%d=%d", x.topic, x.partition, o[x.topic][x.partition])
	}
	return s
}

// Encode serialises offsets for a checkpoint snapshot.
func (o Offsets) Encode() ([]byte, error) { return json.Marshal(o) }

// DecodeOffsets reads what Encode wrote.
func DecodeOffsets(b []byte) (Offsets, error) {
	o := Offsets{}
	if len(b) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("decode source offsets: %w", err)
	}
	return o, nil
}

func itoa(i int) string { return strconv.Itoa(i) }
