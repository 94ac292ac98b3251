package config

import (
	"fmt"
	"strings"
	"time"
)

// The defaults, all in one place. fillDefaults applies them to every field
// that set reports absent and that is still zero: for a file, set is "the key
// had a value", so an explicit 0 stays 0 (and validation may reject it); for
// a Job built in code, set is always false, so zero means unset.
func fillDefaults(j *Job, set func(key string) bool) {
	str := func(key string, p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	num := func(key string, p *int, v int) {
		if !set(key) && *p == 0 {
			*p = v
		}
	}
	dur := func(key string, p *time.Duration, v time.Duration) {
		if !set(key) && *p == 0 {
			*p = v
		}
	}
	size := func(key string, p *ByteSize, v ByteSize) {
		if !set(key) && *p == 0 {
			*p = v
		}
	}

	str("kafka.client_id", &j.Kafka.ClientID, j.Name)

	str("source.group", &j.Source.Group, j.Name)
	str("source.start_offset", (*string)(&j.Source.StartOffset), string(Earliest))
	size("source.fetch_max_bytes", &j.Source.FetchMaxBytes, 50*MiB)
	size("source.fetch_max_partition_bytes", &j.Source.FetchMaxPartitionBytes, 512*KiB)

	c := &j.Checkpoint
	dur("checkpoint.interval", &c.Interval, time.Second)
	dur("checkpoint.timeout", &c.Timeout, 60*time.Second)
	dur("checkpoint.min_pause", &c.MinPause, 0)
	num("checkpoint.max_concurrent", &c.MaxConcurrent, 1)
	num("checkpoint.retained", &c.Retained, 3)
	str("checkpoint.mode", (*string)(&c.Mode), string(ExactlyOnce))
	str("checkpoint.dir", &c.Dir, "./data/checkpoints")
	dur("checkpoint.initial_delay", &c.InitialDelay, c.Interval)
	num("checkpoint.tolerable_failures", &c.TolerableFailures, 5)

	str("state.dir", &j.State.Dir, "./data/state")
	size("state.full_snapshot_after", &j.State.FullSnapshotAfter, 64*MiB)

	p := &j.Pipeline
	num("pipeline.parallelism", &p.Parallelism, 1)
	num("pipeline.channel_capacity", &p.ChannelCapacity, 1024)
	str("pipeline.on_decode_error.policy", (*string)(&p.OnDecodeError.Policy), string(DecodeFail))
	for i := range p.Transforms {
		if d := p.Transforms[i].Dedup; d != nil {
			dur(fmt.Sprintf("pipeline.transforms[%d].ttl", i), &d.TTL, 10*time.Minute)
		}
	}

	s := &j.Sink
	switch s.Type {
	case SinkFile:
		str("sink.format", (*string)(&s.Format), string(FormatJSONL))
		size("sink.roll_size", &s.RollSize, 128*MiB)
		dur("sink.roll_age", &s.RollAge, 5*time.Minute)
	case SinkStdout:
		str("sink.format", (*string)(&s.Format), string(FormatJSONL))
	case SinkKafka:
		dur("sink.transaction_timeout", &s.TransactionTimeout, 10*time.Minute)
	case SinkPostgres:
		str("sink.mode", (*string)(&s.Mode), string(Postgres2PC))
	}

	str("http.addr", &j.HTTP.Addr, "127.0.0.1:8080")

	r := &j.Restart
	num("restart.max_failures", &r.MaxFailures, 5)
	dur("restart.initial_backoff", &r.InitialBackoff, time.Second)
	dur("restart.max_backoff", &r.MaxBackoff, 30*time.Second)
}

// normalize puts values into their canonical form before defaults and
// validation: kafka.brokers entries are split on commas (so one variable can
// hold several brokers) and trimmed; the SASL mechanism is upper-cased.
func normalize(j *Job) {
	var brokers []string
	for _, b := range j.Kafka.Brokers {
		for _, part := range strings.Split(b, ",") {
			if part = strings.TrimSpace(part); part != "" {
				brokers = append(brokers, part)
			}
		}
	}
	j.Kafka.Brokers = brokers
	j.Kafka.SASL.Mechanism = SASLMechanism(strings.ToUpper(string(j.Kafka.SASL.Mechanism)))
}
