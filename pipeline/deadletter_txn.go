package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	kafkasink "github.com/connector-dev/connector/sink/kafka"
)

// Dead letters exactly once (checkpoint.mode: exactly_once).
//
// The dead-letter topic is written as the Kafka sink writes its topic: a
// Kafka sink of its own (package sink/kafka) on the dead-letter topic,
// with a transactional writer per worker. A worker's dead letters go into
// its writer's open transaction; at barrier n the worker pre-commits it
// (flushed, its progress marker added, still open) before the sink's
// output, and acknowledges n with the transaction's committable beside
// the sink's (workerData.DeadLetters). When n completes the driver commits
// the sink's committables, then the dead letters' (EndTxn). A restart
// recovers the dead-letter sink as it recovers the job's sink: it commits
// the restored checkpoint's dead-letter transactions again, idempotently
// (a transaction the broker aborted meanwhile is produced again from the
// log), and aborts every other open one of the job's dead-letter ids.
//
// Decision record: the completed checkpoint naming the dead-letter
// transaction decides that its dead letters are to be visible; the
// transaction's commit, which carries the writer's progress marker (group
// <job>:dlq.sink-progress.w<worker>), records that they are. A crash
// before the checkpoint is durable leaves the transaction open or aborted
// (Recover aborts it; the source rewinds and the bad records meet their
// policy again); a crash after it leaves the checkpoint naming it, and the
// restart commits it, or finds its marker and does nothing: never twice.
//
// Fencing: every process of the job uses the same dead-letter
// transactional ids, and Recover initialises every one of them the
// brokers know, which bumps its epoch: the producers of an earlier process
// of the job are fenced (PRODUCER_FENCED) and can commit nothing more; the
// one that recovered commits a transaction only if its marker is not
// there yet. So a second process of a job can never make a dead letter
// visible twice (package sink/kafka, "Fencing").

// deadLetterJob is the name the dead-letter sink runs under: its
// transactional ids are <job>:dlq-w<worker>-t<slot> and
// <job>:dlq-w<worker>-r, its progress groups
// <job>:dlq.sink-progress.w<worker>. A job's name cannot hold ':'
// (config), so they are never another job's (not even one named
// <job>-dlq) nor the job's own Kafka sink's (<job>-w...).
func deadLetterJob(job string) string { return job + ":dlq" }

// defaultDeadLetterTxnTimeout is the dead-letter transactions' timeout
// when the job's sink is not Kafka (else the sink's transaction_timeout):
// the Kafka sink's default, or the brokers' transaction.max.timeout.ms if
// lower. A transaction the broker aborts on timeout
// loses nothing: a restart produces it again from the log.
const defaultDeadLetterTxnTimeout = 10 * time.Minute

// DeadLetterSink is the Kafka sink of job's dead-letter topic
// (pipeline.on_decode_error.topic) as exactly_once dead letters write it,
// for env (env.Job is replaced by the job under its dead-letter name): the
// runtime's, and the txns command's. It does not contact the cluster.
func DeadLetterSink(job *config.Job, env sink.Env) (*kafkasink.Sink, error) {
	// The sink's transaction_timeout when it is Kafka; else a default no
	// key sets, lowered to the brokers' maximum if above it.
	timeout, fit := defaultDeadLetterTxnTimeout, true
	if kc, ok := job.Sink.Config.(*kafkasink.Config); ok && job.Sink.Type == "kafka" && kc.TransactionTimeout > 0 {
		timeout, fit = kc.TransactionTimeout, false
	}
	dj := *job
	dj.Name = deadLetterJob(job.Name)
	env.Job = &dj
	topic := job.Pipeline.OnDecodeError.Topic
	snk, err := kafkasink.New(kafkasink.Config{Topic: topic, Partitioning: kafkasink.PartitionByKey, Compression: "none", TransactionTimeout: timeout, FitTimeout: fit}, env)
	if err != nil {
		return nil, deadLetterErr(topic, err)
	}
	return snk, nil
}

// newDeadLetterSink makes the transactional sink of the dead-letter topic
// (it does not contact the cluster: Recover does).
func (a *attempt) newDeadLetterSink() (sink.Sink, error) {
	j := a.j
	hooks := j.metrics.kafka.Hooks
	snk, err := DeadLetterSink(j.cfg, sink.Env{Log: j.log.With().Bool("dead_letter", true).Logger(), Reached: &j.deadLetterReached,
		KafkaHooks: func(client string) []kgo.Hook { return hooks("dead-letter-" + strings.TrimPrefix(client, "sink-")) }})
	if err != nil {
		return nil, err
	}
	a.defer_(func() { _ = snk.Close() })
	return snk, nil
}

// recoverDeadLetters commits the restored checkpoint's dead-letter
// transactions again and aborts every other open one of the job's
// (sink.Sink's Recover). It runs on the recovery goroutine, after the
// sink's Recover, and touches nothing of r but reading its committables.
func (a *attempt) recoverDeadLetters(ctx context.Context, r *restoredJob, snk sink.Sink, topic string) error {
	done := warnWhileSlow(a.j.log.With().Int("committables", len(r.deadLetters)).Logger(), slowCallWarning,
		"dead-letter recovery (committing the restored checkpoint's dead letters again)")
	err := snk.Recover(ctx, r.deadLetters)
	done()
	if err != nil {
		return fmt.Errorf("recover dead-letter transactions: %w", deadLetterErr(topic, err))
	}
	return nil
}

// deadLetterErr names the dead-letter topic in an error of its sink, and
// moves a key the Kafka sink gave it to the key that configures it.
func deadLetterErr(topic string, err error) error {
	err = fmt.Errorf("dead-letter topic %s: %w", topic, err)
	if key, ok := cfgkey.Of(err); ok && (key == "sink.topic" || key == "sink.transaction_timeout") {
		return cfgkey.Wrap("pipeline.on_decode_error.topic", err)
	}
	return err
}

// produceTxn writes dead letter kr into the worker's open dead-letter
// transaction. A dead letter its topic refuses even cut to fit
// (fitDeadLetter) fails the task: it is neither in the sink nor in the
// topic.
func produceTxn(ctx context.Context, w sink.Writer, kr *kgo.Record) error {
	r := &record.Record{Topic: kr.Topic, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
	if len(kr.Headers) > 0 {
		r.Headers = make([]record.Header, len(kr.Headers))
		for i, h := range kr.Headers {
			r.Headers[i] = record.Header{Key: h.Key, Value: h.Value}
		}
	}
	if err := w.Write(ctx, r); err != nil {
		return fmt.Errorf("%w: dead letter to %s: %w", errFatal, kr.Topic, err)
	}
	return nil
}

// commitDeadLetters commits checkpoint id's dead-letter transactions, as
// commit does the sink's.
func (d *driver) commitDeadLetters(ctx context.Context, id checkpoint.ID, cs []sink.Committable) error {
	if d.deadLetters == nil || len(cs) == 0 {
		return nil
	}
	return d.commitTo(ctx, id, d.deadLetters, "dead-letter commit", cs)
}
