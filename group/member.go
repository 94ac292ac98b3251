package group

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/pipeline"
)

// Options are what a Member takes besides the job's config.
type Options struct {
	// Registry is the process's registry: the group's metrics are
	// registered on it. Each slot's job gets a registry of its own, which
	// Gather serves with a slot label.
	Registry *prometheus.Registry
	Log      zerolog.Logger
}

// Member is this process's membership in the job's group, and the slots
// the group gave it. New, then Run until the context ends; Ready, Live,
// Info, Status and Gather may be called from any goroutine meanwhile.
type Member struct {
	cfg     *config.Job
	log     zerolog.Logger // with job=<name>
	base    zerolog.Logger // Options.Log, for the slots' jobs
	reg     *prometheus.Registry
	metrics *metrics
	topic   string // the slot topic, also the group's id

	mu      sync.Mutex
	slots   map[int]*slot // the slots this member runs or is stopping
	client  *kgo.Client   // nil until Run made it
	fail    chan error    // a slot's job that failed for good
	retired retired       // the counters of the slots it stopped
	closing bool          // Run is stopping: no slot starts any more
	// inGroup: the member has a group session (an assignment since it
	// last lost one). franz-go keeps the last generation after a session
	// is lost (brokers gone), which Ready took for one.
	inGroup bool
	joined  bool // it had a group session once: its credentials were taken
}

// New prepares a member; cfg must be valid and in group mode.
func New(cfg *config.Job, opts Options) *Member {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	return &Member{
		cfg: cfg, log: opts.Log.With().Str("job", cfg.Name).Logger(), base: opts.Log, reg: opts.Registry,
		metrics: newMetrics(opts.Registry), topic: SlotTopic(cfg.Name),
		slots: map[int]*slot{}, fail: make(chan error, 1),
	}
}

// SlotTopic is the topic whose partitions are a job's slots, and the id of
// the job's group.
func SlotTopic(job string) string { return job + ".slots" }

// Run ensures the slot topic, joins the group and runs the slots it is
// given until ctx ends (every slot is then stopped with a final checkpoint
// and the group left) or a slot's job fails for good (the error; the other
// slots are stopped the same way, so that the others take over at once).
func (m *Member) Run(ctx context.Context) error {
	if err := m.ensureTopic(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	cl, err := kgo.NewClient(m.clientOpts()...)
	if err != nil {
		return fmt.Errorf("group client: %w", err)
	}
	// Nothing is ever fetched: the slot topic is empty, and its
	// partitions only stand for the slots.
	cl.PauseFetchTopics(m.topic)
	m.mu.Lock()
	m.client = cl
	m.mu.Unlock()
	m.log.Info().Str("group", m.topic).Int("slots", m.cfg.Instances.Slots).Str("protocol", string(m.cfg.Instances.Protocol)).
		Dur("session_timeout_ms", m.cfg.Instances.SessionTimeout).Msg("joining the job's group")

	var failure error
	select {
	case <-ctx.Done():
	case failure = <-m.fail:
		m.log.Error().Err(failure).Msg("a slot failed: stopping every slot and leaving the group")
	}
	// Every slot starts its final checkpoint, and the member leaves the
	// group at once, without waiting for them (Close's revoke returns
	// at once): the others are given the slots meanwhile, and each new
	// owner takes its slot as soon as its lock is released, so a slot
	// waits for its own final checkpoint, not for the slowest one's.
	m.mu.Lock()
	m.closing = true
	for _, s := range m.slots {
		s.cancel()
	}
	m.mu.Unlock()
	cl.Close()
	m.stopSlots(m.owned(), "stop")
	if failure == nil {
		select {
		case failure = <-m.fail: // a slot whose final checkpoint failed
		default:
		}
	}
	m.log.Info().Msg("left the job's group")
	return failure
}

// clientOpts are the group member's client options.
func (m *Member) clientOpts() []kgo.Opt {
	in := m.cfg.Instances
	opts := append(kafkaclient.Opts(m.cfg.Kafka, m.log),
		kgo.ConsumerGroup(m.topic),
		kgo.ConsumeTopics(m.topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(in.SessionTimeout),
		kgo.HeartbeatInterval(heartbeatOf(in.SessionTimeout)),
		// A revoke waits for the slots' final checkpoints.
		kgo.RebalanceTimeout(m.cfg.Checkpoint.Timeout+in.SessionTimeout),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.WithHooks(m),
	)
	if in.Protocol == config.GroupConsumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	return opts
}

// heartbeatOf is the heartbeat interval for a session timeout: a twentieth
// of it (500ms for the default 10s), so that members join a rebalance
// within half a second, between 100ms and Kafka's default 3s.
func heartbeatOf(session time.Duration) time.Duration {
	return min(max(session/20, 100*time.Millisecond), 3*time.Second)
}

// onAssigned starts the slots the group just gave this member.
func (m *Member) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	ps := assigned[m.topic]
	m.mu.Lock()
	m.inGroup, m.joined = true, true
	m.mu.Unlock()
	m.metrics.events.WithLabelValues("assigned").Inc()
	if len(ps) == 0 {
		return
	}
	ks := slotsOf(ps)
	m.log.Info().Ints("slots", ks).Msg("slots assigned")
	for _, k := range ks {
		m.startSlot(k)
	}
}

// onRevoked stops the slots a rebalance moves away, and returns only once
// their final checkpoints are committed and their locks released.
func (m *Member) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if m.isClosing() {
		return // leaving (Run stops the slots): not a rebalance
	}
	// franz-go calls it at the end of every session too, with nothing:
	// only a revocation of slots counts.
	if ks := m.running(slotsOf(revoked[m.topic])); len(ks) > 0 {
		m.metrics.events.WithLabelValues("revoked").Inc()
		m.log.Info().Ints("slots", ks).Msg("slots revoked: stopping them with a final checkpoint")
		m.stopSlots(ks, "revoked")
	}
}

// onLost stops every slot: the group dropped this member (it was silent
// past the session timeout), and may have given them to others already,
// who wait for their locks.
func (m *Member) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	m.mu.Lock()
	m.inGroup = false
	m.mu.Unlock()
	if ks := m.running(slotsOf(lost[m.topic])); len(ks) > 0 {
		m.metrics.events.WithLabelValues("lost").Inc()
		m.log.Warn().Ints("slots", ks).Msg("slots lost (this member was dropped from the group): stopping them")
		m.stopSlots(ks, "lost")
	}
}

func slotsOf(ps []int32) []int {
	ks := make([]int, len(ps))
	for i, p := range ps {
		ks[i] = int(p)
	}
	slices.Sort(ks)
	return ks
}

// running keeps of ks the slots this member runs (or is stopping).
func (m *Member) running(ks []int) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.DeleteFunc(ks, func(k int) bool { return m.slots[k] == nil })
}

func (m *Member) isClosing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}

// owned lists the slots this member runs, sorted.
func (m *Member) owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.slots))
}

// startSlot starts slot k, unless it runs already.
func (m *Member) startSlot(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.slots[k]; ok || m.closing {
		return
	}
	s := newSlot(m, k)
	m.slots[k] = s
	m.metrics.owned.Set(float64(len(m.slots)))
	go s.run()
}

// stopSlots stops the slots ks (those this member runs) at once and waits
// until each one's job returned and its lock is released.
func (m *Member) stopSlots(ks []int, why string) {
	var wg sync.WaitGroup
	for _, k := range ks {
		m.mu.Lock()
		s := m.slots[k]
		m.mu.Unlock()
		if s == nil {
			continue
		}
		wg.Go(func() {
			start := time.Now()
			s.stop()
			var info pipeline.JobInfo
			var st pipeline.Status
			if j := s.job.Load(); j != nil {
				info, st = j.Info(), j.Status()
			}
			m.metrics.handover.WithLabelValues("release").Observe(time.Since(start).Seconds())
			m.log.Info().Int("slot", k).Str("why", why).Dur("took_ms", time.Since(start)).Msg("slot released")
			m.mu.Lock()
			m.retired.add(info, st) // with the delete: Info never counts a slot twice
			delete(m.slots, k)
			m.metrics.owned.Set(float64(len(m.slots)))
			m.mu.Unlock()
		})
	}
	wg.Wait()
}

// failed reports a slot's job that failed for good; Run then stops.
func (m *Member) failed(k int, err error) { m.failWith(fmt.Errorf("slot %d: %w", k, err)) }

// failWith makes Run stop with err (the first such error wins).
func (m *Member) failWith(err error) {
	select {
	case m.fail <- err:
	default: // another failure is already on its way
	}
}

// OnGroupManageError is franz-go's hook (kgo.HookGroupManageError): the
// group refusing this member for good (no right to the group, a session
// timeout the broker does not allow) ends Run, classed
// kafkaclient.ErrMisconfigured; franz-go retries the others.
func (m *Member) OnGroupManageError(err error) {
	// Refused credentials before the first session are the config's (exit
	// 2); once the member was in the group they worked, and a refusal
	// later (an expired token, rotated credentials) is retried.
	m.mu.Lock()
	joined := m.joined
	m.mu.Unlock()
	if key, hint, misconfigured := kafkaclient.Explain(err, m.cfg.Kafka); misconfigured && !joined {
		m.failWith(cfgkey.Wrap(key, fmt.Errorf("%w: %s (%v)", kafkaclient.ErrMisconfigured, hint, err)))
		return
	}
	for _, fatal := range []error{kerr.GroupAuthorizationFailed, kerr.InvalidSessionTimeout, kerr.TopicAuthorizationFailed, kerr.GroupMaxSizeReached} {
		if errors.Is(err, fatal) {
			key := "" // a refused principal, a full group: no key of the file
			if errors.Is(err, kerr.InvalidSessionTimeout) {
				key = "instances.session_timeout"
			}
			m.failWith(cfgkey.Wrap(key, fmt.Errorf("%w: the group %s refused this member: %w (instances.session_timeout %v must lie within the broker's group.min/max.session.timeout.ms; the principal needs READ on the group and DESCRIBE on the topic %s)",
				kafkaclient.ErrMisconfigured, m.topic, err, m.cfg.Instances.SessionTimeout, m.topic)))
			return
		}
	}
}
