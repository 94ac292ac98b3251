package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/source"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Start positions used for a partition with neither a checkpoint nor a
// committed offset.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// DefaultBatchSize is the default Options.BatchSize.
const DefaultBatchSize = source.BatchSize

// Options are the source's runtime settings: the source: section (Config)
// and the job's kafka: section turned into what the readers need. Zero
// fields take the defaults of withDefaults.
type Options struct {
	Brokers     []string
	Topics      []string
	Group       string
	StartOffset string // StartEarliest (default) or StartLatest (the last stable offset)
	// Readers is the number of parallel readers (source tasks); each owns a
	// share of the partitions. Default 1.
	Readers int
	// DiscoverInterval is how often new partitions are looked for. Default 10s.
	DiscoverInterval time.Duration
	// BatchSize caps the records handed to the emitter at once. Default
	// DefaultBatchSize.
	BatchSize int
	// FetchMaxBytes caps one fetch response (franz-go's default, 50 MiB,
	// if 0); FetchMaxPartitionBytes one partition's share of it (1 MiB if
	// 0), of which a reader asks for less when its records are small
	// (fetchsize.go).
	FetchMaxBytes          int32
	FetchMaxPartitionBytes int32
	// FetchesInFlight is how many clients a reader has, each over a share
	// of its partitions with its own fetch in flight (fetchers.go); no more
	// than its partitions (one if it has none). Default 2.
	FetchesInFlight int
	// ClientOpts are extra franz-go options (TLS, SASL, client id). The
	// seed brokers are Brokers, not an option here.
	ClientOpts []kgo.Opt
	// OnPositionLost is what Open does with a restored position that no
	// longer applies (PositionLostFail, the default, or
	// PositionLostEarliest); see checkRestored.
	OnPositionLost string
	// Hooks, if not nil, returns the hooks for one client the source
	// makes: "source-admin", and "source-<i>" for reader i's first
	// client, "source-<i>.<j>" for its next ones (FetchesInFlight; see
	// source.Env.KafkaHooks).
	Hooks func(client string) []kgo.Hook
	// Explain, if not nil, names the likely cause of a failure to reach
	// the brokers (kafkaclient.Explain); misconfigured ones end Open
	// (classed kafkaclient.ErrMisconfigured, the key attached: cfgkey),
	// the others are retried with the cause logged.
	Explain func(error) (key, hint string, misconfigured bool)
	// Slot, if not nil, limits the source to the slot's partitions (group
	// mode); Group is then already the slot's group, and BaseGroup the
	// job's: a partition with neither a checkpoint nor an offset in Group
	// (the slot never ran) starts at BaseGroup's committed offset, where
	// the job stopped in single mode.
	Slot      *source.Slot
	BaseGroup string
}

// explain turns a misconfigured connection into an error classed
// kafkaclient.ErrMisconfigured and source.ErrPermanent, and adds the
// likely cause to the others.
func (c Options) explain(err error) error {
	if err == nil || c.Explain == nil {
		return err
	}
	key, hint, misconfigured := c.Explain(err)
	switch {
	case misconfigured:
		return cfgkey.Wrap(key, fmt.Errorf("%w: %w: %s (%v)", source.ErrPermanent, kafkaclient.ErrMisconfigured, hint, err))
	case hint != "":
		return fmt.Errorf("%w (likely cause: %s)", err, hint)
	}
	return err
}

// minReadLimit is the least a client reads of a response: franz-go's
// default (BrokerMaxReadBytes); a variable for tests.
var minReadLimit int64 = 100 << 20

// maxReadLimit is the most franz-go lets a client read of a response.
const maxReadLimit = 1 << 30

// readLimit is the largest response the source's clients read: twice the
// larger fetch setting, at least minReadLimit, at most maxReadLimit. The
// fetch loop sends its own requests, which franz-go does not check
// against its limit as it does its consumer's fetch_max_bytes: with fetch
// settings above it, every response larger than the limit was refused and
// the partitions asked again, forever. A response can still exceed it: a
// broker returns a partition's first record batch whole, whatever the
// settings (errTooLarge).
func (c Options) readLimit() int32 {
	return int32(min(maxReadLimit, max(minReadLimit, 2*int64(max(c.FetchMaxBytes, c.FetchMaxPartitionBytes)))))
}

// clientOpts are the options of the client called name.
func (c Options) clientOpts(name string) []kgo.Opt {
	var hooks []kgo.Hook
	if c.Hooks != nil {
		hooks = c.Hooks(name)
	}
	return c.clientOptsWith(hooks)
}

// clientOptsWith are the options of a client with these hooks.
func (c Options) clientOptsWith(hooks []kgo.Hook) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.BrokerMaxReadBytes(c.readLimit())}
	if c.FetchMaxBytes > 0 {
		// Unused (the fetch loop sends its own requests), but franz-go
		// refuses a read limit below it, 50 MiB by default.
		opts = append(opts, kgo.FetchMaxBytes(c.FetchMaxBytes))
	}
	opts = append(opts, c.ClientOpts...)
	if len(hooks) > 0 {
		opts = append(opts, kgo.WithHooks(hooks...))
	}
	return opts
}

func (c Options) withDefaults() Options {
	if c.StartOffset == "" {
		c.StartOffset = StartEarliest
	}
	if c.Readers <= 0 {
		c.Readers = 1
	}
	if c.DiscoverInterval <= 0 {
		c.DiscoverInterval = 10 * time.Second
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 50 << 20
	}
	if c.FetchMaxPartitionBytes <= 0 {
		c.FetchMaxPartitionBytes = 1 << 20
	}
	if c.FetchesInFlight <= 0 {
		c.FetchesInFlight = 2
	}
	return c
}

func (c Options) validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("no topics"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("no group"))
	}
	if c.StartOffset != StartEarliest && c.StartOffset != StartLatest {
		errs = append(errs, fmt.Errorf("start offset %q is neither %s nor %s", c.StartOffset, StartEarliest, StartLatest))
	}
	return errors.Join(errs...)
}
