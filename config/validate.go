package config

import (
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/connector-dev/connector/internal/spec"
)

// Problems collects what is wrong with a config; see package internal/spec.
type Problems = spec.Problems

// validate checks j once, reporting every problem to errs: every struct's
// own Validate (each under its key), then the kinds' checks against the
// whole job (JobValidator).
func validate(j *Job, errs *collector) {
	var p spec.Problems
	j.validateJob(&p)
	spec.ValidateAll(j, "", &p)
	for _, pl := range j.plugins() {
		if jv, ok := pl.Config.(JobValidator); ok {
			jv.ValidateJob(j, &p)
		}
	}
	for _, pr := range p.List() {
		errs.add(pr.Key, "%s", pr.Msg)
	}
}

// plugins returns the job's plugins: source, sink, then the transforms.
func (j *Job) plugins() []*Plugin {
	out := []*Plugin{&j.Source, &j.Sink}
	for i := range j.Pipeline.Transforms {
		out = append(out, &j.Pipeline.Transforms[i])
	}
	return out
}

// validateJob checks what belongs to the job as a whole.
func (j *Job) validateJob(p *Problems) {
	if msg := nameProblem(j.Name); msg != "" {
		p.Add("name", "%s", msg)
	}
	j.validateInstances(p)
	j.Source.check(SectionSource, "source", p)
	j.Sink.check(SectionSink, "sink", p)
	for i := range j.Pipeline.Transforms {
		j.Pipeline.Transforms[i].check(SectionTransform, indexKey("pipeline.transforms", i), p)
	}
}

// check reports a plugin without a type or of an unknown kind (for a Job
// built in code; the decoder reports them for a file).
func (pl *Plugin) check(section, key string, p *Problems) {
	switch _, known := LookupKind(section, pl.Type); {
	case pl.Type == "":
		p.Add(key+".type", "is required (one of %s)", orList(kindNames(section)))
	case !known:
		p.Add(key+".type", "unknown %s type %q: this build runs %s%s", section, pl.Type, orList(kindNames(section)), suggest(pl.Type, kindNames(section)))
	}
}

// Validate checks the cluster settings.
func (k *Kafka) Validate(p *Problems) {
	if len(k.Brokers) == 0 {
		p.Add("brokers", "at least one broker is required")
	}
	for i, b := range k.Brokers {
		if msg := addrProblem(b, 1); msg != "" {
			p.Add(indexKey("brokers", i), "%s", msg)
		}
	}
	k.TLS.validate(p)
	k.SASL.validate(p, k.TLS.On())
}

func (t *TLS) validate(p *Problems) {
	t.Enabled = t.On() // any key turns TLS on: the dump (validate --print, /api/job) says so
	if t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" {
		if _, err := t.Config(); err != nil {
			p.Add(err.key, "%s", err.msg)
		}
	}
}

func (s *SASL) validate(p *Problems, tls bool) {
	userPass := func() {
		if s.Username == "" {
			p.Add("sasl.username", "is required with mechanism %s", s.Mechanism)
		}
		if s.Password.Value() == "" {
			p.Add("sasl.password", "is required with mechanism %s", s.Mechanism)
		}
	}
	cleartext := func(what string) {
		if !tls && !s.AllowCleartext {
			p.Add("sasl.mechanism", "%s without TLS sends the %s across the network in clear: set tls (enabled: true, or ca_file) beside sasl, or, on a network you trust, sasl.allow_cleartext: true", s.Mechanism, what)
		}
	}
	switch s.Mechanism {
	case SASLNone:
		if s.Username != "" || s.Password.Value() != "" || s.TokenFile != "" || s.TokenCommand != "" || s.AccessKeyID != "" || !s.SecretAccessKey.IsZero() {
			p.Add("sasl.mechanism", "is required when a username, password, token or AWS key is set (without it there is no SASL, and they are not used)")
		}
	case SASLPlain:
		userPass()
		cleartext("password")
	case SASLScramSHA256, SASLScramSHA512:
		userPass()
	case SASLOAuthBearer:
		if (s.TokenFile == "") == (s.TokenCommand == "") {
			p.Add("sasl.token_file", "OAUTHBEARER needs one of token_file and token_command")
		}
		if s.TokenFile != "" {
			if _, err := os.Stat(s.TokenFile); err != nil {
				p.Add("sasl.token_file", "%v", err)
			}
		}
		cleartext("token")
	case SASLAWSMSKIAM:
		if (s.AccessKeyID == "") != s.SecretAccessKey.IsZero() {
			p.Add("sasl.secret_access_key", "access_key_id and secret_access_key go together: set both, or neither to take AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment")
		}
		if !tls {
			p.Add("sasl.mechanism", "AWS_MSK_IAM needs TLS: set tls.enabled: true beside sasl (MSK's IAM listeners take TLS only)")
		}
	default:
		spec.OneOf(p, "sasl.mechanism", "SASL mechanism", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer, SASLAWSMSKIAM)
	}
}

// fullSnapshotLimit bounds state.full_snapshot_after: a restore applies up
// to twice this much changelog.
const fullSnapshotLimit = 64 * GiB

// Validate checks the state settings.
func (s *State) Validate(p *Problems) {
	p.Required("dir", s.Dir)
	spec.Positive(p, "full_snapshot_after", s.FullSnapshotAfter)
	spec.AtMost(p, "full_snapshot_after", s.FullSnapshotAfter, fullSnapshotLimit)
}

// Upper bounds of the pipeline: far above what a 2-core machine uses, low
// enough that a typo cannot exhaust memory. Every source reader has a
// channel to every worker, so channels grow as parallelism squared (a
// million of them at 1024, allocated before the first record).
// channelRecordsLimit bounds the records all channels together may buffer,
// parallelism² × channel_capacity; the default capacity stays within it
// up to parallelism 256.
const (
	maxParallelismLimit  = 32768 // key groups are 2 bytes in state keys
	parallelismLimit     = 256
	channelCapacityLimit = 1 << 20
	channelRecordsLimit  = 1 << 26
)

// Validate checks the task graph's settings.
func (pl *Pipeline) Validate(p *Problems) {
	p.Between("max_parallelism", pl.MaxParallelism, 1, maxParallelismLimit)
	p.AtLeast("parallelism", pl.Parallelism, 1)
	switch {
	case pl.Parallelism > parallelismLimit:
		p.Add("parallelism", "must be at most %d, got %d", parallelismLimit, pl.Parallelism)
	case pl.Parallelism > pl.MaxParallelism && pl.MaxParallelism >= 1:
		p.Add("parallelism", "%d is more than pipeline.max_parallelism (%d), the number of key groups", pl.Parallelism, pl.MaxParallelism)
	}
	if pl.KeyBy != "" && slices.Contains(strings.Split(pl.KeyBy, "."), "") {
		p.Add("key_by", "%q has an empty path segment", pl.KeyBy)
	}
	spec.OneOf(p, "route", "route", pl.Route, RouteAuto, RouteKey, RoutePartition)
	if pl.Route == RoutePartition && pl.KeyBy != "" {
		p.Add("route", "is partition, but key_by (%q) asks for records to be shuffled by that field; drop one of the two", pl.KeyBy)
	}
	p.Between("channel_capacity", pl.ChannelCapacity, 1, channelCapacityLimit)
	n, c := pl.Parallelism, pl.ChannelCapacity
	if n >= 1 && n <= parallelismLimit && c <= channelCapacityLimit && n*n*c > channelRecordsLimit {
		p.Add("channel_capacity", "%d records in each of %d×%d channels is more than %d in all; lower it or pipeline.parallelism",
			c, n, n, channelRecordsLimit)
	}
}

// Validate checks the decode-error policy.
func (o *OnDecodeError) Validate(p *Problems) {
	spec.OneOf(p, "policy", "policy", o.Policy, DecodeFail, DecodeSkip, DecodeDeadLetter)
	switch {
	case o.Policy == DecodeDeadLetter && o.Topic == "":
		p.Add("topic", "is required with policy dead_letter")
	case o.Policy != DecodeDeadLetter && o.Topic != "":
		p.Add("topic", "is only used with policy dead_letter")
	case o.Topic != "":
		if msg := TopicProblem(o.Topic); msg != "" {
			p.Add("topic", "%s", msg)
		}
	}
}

// Validate checks the listen address; port 0 picks a free port.
func (h *HTTP) Validate(p *Problems) {
	if msg := addrProblem(h.Addr, 0); msg != "" {
		p.Add("addr", "%s", msg)
	}
	p.Between("stall_intervals", h.StallIntervals, 0, stallIntervalsLimit)
}

// stallIntervalsLimit bounds http.stall_intervals (a week at 1 s).
const stallIntervalsLimit = 604800

// backoffLimit bounds the restart backoffs: a job that should wait longer
// is better restarted by its supervisor. It also keeps the doubling of the
// backoff far from overflowing.
const backoffLimit = time.Hour

// Validate checks the restart policy.
func (r *Restart) Validate(p *Problems) {
	p.Between("max_failures", r.MaxFailures, 1, math.MaxInt32)
	spec.Positive(p, "initial_backoff", r.InitialBackoff)
	spec.AtMost(p, "initial_backoff", r.InitialBackoff, backoffLimit)
	spec.AtMost(p, "max_backoff", r.MaxBackoff, backoffLimit)
	if r.MaxBackoff < r.InitialBackoff {
		p.Add("max_backoff", "%v is less than restart.initial_backoff (%v)", r.MaxBackoff, r.InitialBackoff)
	}
}

// orList writes "a, b or c".
func orList(words []string) string { return spec.OrList(words) }
