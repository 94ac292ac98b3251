package config

import (
	"net"
	"slices"
	"time"
)

// validate checks j once, reporting every problem to errs.
func validate(j *Job, errs *collector) {
	v := &validator{j: j, errs: errs}
	v.name()
	v.kafka()
	v.source()
	v.checkpoint()
	v.pipeline()
	v.sink()
	v.http()
	v.restart()
}

type validator struct {
	j    *Job
	errs *collector
}

func (v *validator) name() {
	switch n := v.j.Name; {
	case n == "":
		v.errs.add("name", "is required")
	case !validName(n):
		v.errs.add("name", "%q may only contain letters, digits, '.', '_' and '-'", n)
	case len(n) > 200:
		v.errs.add("name", "is longer than 200 characters")
	}
}

func validName(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

func (v *validator) kafka() {
	k := v.j.Kafka
	if len(k.Brokers) == 0 {
		v.errs.add("kafka.brokers", "at least one broker is required")
	}
	s := k.SASL
	switch s.Mechanism {
	case SASLNone:
		if s.Username != "" || s.Password.Value() != "" {
			v.errs.add("kafka.sasl.mechanism", "is required when a username or password is set")
		}
		return
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		oneOf(v, "kafka.sasl.mechanism", "SASL mechanism", string(s.Mechanism), SASLPlain, SASLScramSHA256, SASLScramSHA512)
		return
	}
	if s.Username == "" {
		v.errs.add("kafka.sasl.username", "is required with mechanism %s", s.Mechanism)
	}
	if s.Password.Value() == "" {
		v.errs.add("kafka.sasl.password", "is required with mechanism %s", s.Mechanism)
	}
}

func (v *validator) source() {
	s := v.j.Source
	if len(s.Topics) == 0 {
		v.errs.add("source.topics", "at least one topic is required")
	}
	v.names("source.topics", s.Topics, "topic")
	if s.Group == "" && v.j.Name != "" { // else it defaults to the name, reported missing
		v.errs.add("source.group", "is required")
	}
	oneOf(v, "source.start_offset", "start offset", string(s.StartOffset), Earliest, Latest)
	v.positiveSize("source.fetch_max_bytes", s.FetchMaxBytes)
	v.positiveSize("source.fetch_max_partition_bytes", s.FetchMaxPartitionBytes)
}

// names checks that list holds non-empty, distinct names.
func (v *validator) names(key string, list []string, what string) {
	for i, name := range list {
		k := indexKey(key, i)
		if name == "" {
			v.errs.add(k, "empty %s name", what)
		} else if j := slices.Index(list, name); j < i {
			v.errs.add(k, "%q is listed twice", name)
		}
	}
}

func (v *validator) checkpoint() {
	c := v.j.Checkpoint
	v.positive("checkpoint.interval", c.Interval)
	v.positive("checkpoint.timeout", c.Timeout)
	v.notNegative("checkpoint.min_pause", c.MinPause)
	v.atLeast("checkpoint.max_concurrent", c.MaxConcurrent, 1)
	v.atLeast("checkpoint.retained", c.Retained, 1)
	oneOf(v, "checkpoint.mode", "mode", string(c.Mode), ExactlyOnce, AtLeastOnce)
	v.required("checkpoint.dir", c.Dir)
	v.notNegative("checkpoint.initial_delay", c.InitialDelay)
	v.atLeast("checkpoint.tolerable_failures", c.TolerableFailures, 0)
	v.required("state.dir", v.j.State.Dir)
	v.positiveSize("state.full_snapshot_after", v.j.State.FullSnapshotAfter)
}

func (v *validator) http() {
	a := v.j.HTTP.Addr
	if _, _, err := net.SplitHostPort(a); err != nil {
		v.errs.add("http.addr", "%q is not host:port", a)
	}
}

func (v *validator) restart() {
	r := v.j.Restart
	v.atLeast("restart.max_failures", r.MaxFailures, 1)
	v.positive("restart.initial_backoff", r.InitialBackoff)
	if r.MaxBackoff < r.InitialBackoff {
		v.errs.add("restart.max_backoff", "%v is less than restart.initial_backoff (%v)", r.MaxBackoff, r.InitialBackoff)
	}
}

// Small checks, each naming the key and the offending value.

func (v *validator) required(key, s string) {
	if s == "" {
		v.errs.add(key, "is required")
	}
}

func (v *validator) atLeast(key string, n, low int) {
	if n < low {
		v.errs.add(key, "must be at least %d, got %d", low, n)
	}
}

func (v *validator) positive(key string, d time.Duration) {
	if d <= 0 {
		v.errs.add(key, "must be positive, got %v", d)
	}
}

func (v *validator) notNegative(key string, d time.Duration) {
	if d < 0 {
		v.errs.add(key, "must not be negative, got %v", d)
	}
}

func (v *validator) positiveSize(key string, b ByteSize) {
	if b <= 0 {
		v.errs.add(key, "must be positive, got %v", b)
	}
}

// oneOf checks that s is one of allowed: `unknown mode "x" (want a or b)`.
func oneOf[T ~string](v *validator, key, what, s string, allowed ...T) {
	words := make([]string, len(allowed))
	for i, a := range allowed {
		if string(a) == s {
			return
		}
		words[i] = string(a)
	}
	v.errs.add(key, "unknown %s %q (want %s)", what, s, orList(words))
}
