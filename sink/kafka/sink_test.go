package kafka

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestOutputIsVisibleOnlyOnceItsCheckpointCommits: pre-committed records
// are invisible to read_committed consumers until Commit; then each is
// there once, and the writer's marker says the checkpoint.
func TestOutputIsVisibleOnlyOnceItsCheckpointCommits(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 50)
	cs := preCommit(t, w, 1)
	write(t, w, 50, 60) // the next transaction
	if got := committedValues(t, b, topic, 0); len(got) != 0 {
		t.Fatalf("%d records visible before the commit", len(got))
	}
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	w.Committed(1)
	if got := committedValues(t, b, topic, 50); !slices.Equal(got, values(0, 50)) {
		t.Fatalf("visible after commit: %d records, want the 50 before the barrier", len(got))
	}
	progress, err := s.readProgress(ctx, true)
	if err != nil || progress[0] != 1 {
		t.Fatalf("progress = %v, %v; want writer 0 at checkpoint 1", progress, err)
	}
	if err := s.Commit(ctx, cs); err != nil { // again, as after a crash before Committed
		t.Fatalf("second commit: %v", err)
	}
}

// TestCheckpointsThatFailAreCarriedAndCommittedWithTheNext: the
// transactions of two failed checkpoints stay open and are committed, in
// order, with the next checkpoint that completes.
func TestCheckpointsThatFailAreCarriedAndCommittedWithTheNext(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 10)
	preCommit(t, w, 1) // checkpoint 1 fails
	write(t, w, 10, 20)
	preCommit(t, w, 2) // checkpoint 2 fails
	write(t, w, 20, 30)
	cs := preCommit(t, w, 3)
	if len(cs) != 3 {
		t.Fatalf("checkpoint 3 carries %d committables, want 3", len(cs))
	}
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	w.Committed(3)
	if got := committedValues(t, b, topic, 30); !slices.Equal(got, values(0, 30)) {
		t.Fatalf("visible: %d records, want 30 once", len(got))
	}
}

// TestARestartCommitsWhatTheCrashLeftOpenFromTheLog: a process dies after
// checkpoint 1's metadata was durable but before its EndTxn (writer 0) and
// after writer 1 committed. The next process aborts the open transaction
// and commits writer 0's records again from the log; writer 1's are not
// produced twice.
func TestARestartCommitsWhatTheCrashLeftOpenFromTheLog(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	write(t, w0, 0, 40)
	write(t, w1, 40, 80)
	cs := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	if err := s.Commit(ctx, cs[1:]); err != nil { // writer 1 only: the crash comes between the two
		t.Fatal(err)
	}
	// The crash: nothing is closed; a new process recovers checkpoint 1.
	s2 := testSink(t, b, topic, topic, nil)
	recover_(t, s2, cs)
	if got := committedValues(t, b, topic, 80); !slices.Equal(got, values(0, 80)) {
		t.Fatalf("visible after recovery: %d records, want 80 once", len(got))
	}
	if err := s2.Commit(ctx, cs); err != nil {
		t.Fatalf("the commit after recovery: %v", err)
	}
	// The first process comes back to life: its transaction was aborted
	// and its producer fenced; its commit fails, nothing shows twice.
	if err := s.Commit(ctx, cs[:1]); err == nil {
		t.Log("the old process's commit was refused silently (marker already past)")
	}
	if got := committedValues(t, b, topic, 80); !slices.Equal(got, values(0, 80)) {
		t.Fatalf("visible after the old process's commit: %d records, want 80 once", len(got))
	}
}

// TestATransactionTheBrokerAbortedOnTimeoutLosesNothing: the process dies
// after pre-commit; while it is down the broker aborts the transaction on
// its timeout (5 s: long enough for a loaded machine to pre-commit 25
// records before it). The restart produces the records again from the log.
func TestATransactionTheBrokerAbortedOnTimeoutLosesNothing(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 2)
	s := testSink(t, b, topic, topic, func(c *Config) { c.TransactionTimeout = 5 * time.Second })
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 25)
	cs := preCommit(t, w, 7)
	adm := kafkatest.Admin(t, b)
	deadline := time.Now().Add(60 * time.Second)
	for { // the broker aborts expired transactions on a timer of its own
		d, err := adm.DescribeTransactions(ctx, txnOf(t, cs[0]))
		if err == nil {
			if st, ok := d[txnOf(t, cs[0])]; ok && st.State != "Ongoing" {
				t.Logf("transaction state after the timeout: %s", st.State)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker did not abort the transaction within 60 s")
		}
		time.Sleep(500 * time.Millisecond)
	}
	s2 := testSink(t, b, topic, topic, func(c *Config) { c.TransactionTimeout = 5 * time.Second })
	recover_(t, s2, cs)
	if got := committedValues(t, b, topic, 25); !slices.Equal(got, values(0, 25)) {
		t.Fatalf("visible after recovery: %d records, want 25 once", len(got))
	}
}

// TestCloseLeavesNoTransactionOpen: a stop aborts what was written after the
// last pre-commit and pre-committed transactions of checkpoints that did
// not complete; a checkpoint with no records opens no transaction.
func TestCloseLeavesNoTransactionOpen(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	if cs := preCommit(t, w, 1); len(cs) != 0 {
		t.Fatalf("an empty checkpoint made committables %v", cs)
	}
	write(t, w, 0, 5)
	preCommit(t, w, 2)
	write(t, w, 5, 10)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	listed, err := s.adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range listed.Sorted() {
		if strings.HasPrefix(tx.TxnID, topic+"-w") {
			t.Errorf("transaction %s is %s after Close", tx.TxnID, tx.State)
		}
	}
	if got := committedValues(t, b, topic, 0); len(got) != 0 {
		t.Errorf("%d records visible", len(got))
	}
}

// TestARecordTooLargeIsABadRecordNotAFailedTransaction: a record above the
// topic's max.message.bytes is refused before it is produced (the
// decode-error policy applies), and the transaction goes on.
func TestARecordTooLargeIsABadRecordNotAFailedTransaction(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	limitRecords(t, s, topic, "400")
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 3)
	big := make([]byte, 350)
	err := w.Write(ctx, recordOf(big))
	if !errors.Is(err, sink.ErrBadRecord) {
		t.Fatalf("Write of 350 bytes: %v, want ErrBadRecord", err)
	}
	write(t, w, 3, 40) // more than a batch of 400 bytes holds
	cs := preCommit(t, w, 1)
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if got := committedValues(t, b, topic, 40); !slices.Equal(got, values(0, 40)) {
		t.Fatalf("visible: %v", got)
	}
}

// limitRecords sets topic's max.message.bytes and waits until the broker
// describes it: the controller takes the change before the broker's
// metadata has it, and the sink would read the old limit.
func limitRecords(t *testing.T, s *Sink, topic, bytes string) {
	t.Helper()
	if _, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &bytes}}, topic); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !topicConfigIs(t, s.adm, topic, "max.message.bytes", bytes) {
		if time.Now().After(deadline) {
			t.Fatalf("max.message.bytes of %s is not %s 20 s after it was set", topic, bytes)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not hiding a race
	}
}

// TestOriginHeadersCountTowardsTheRecordLimit: with origin_headers, a
// record that fits max.message.bytes without its origin headers but not
// with them is a bad record at Write. It passed Write before, the broker
// refused its batch (MESSAGE_TOO_LARGE), the pre-commit failed, and the
// restart met the same record again, forever, where the bad-record policy
// should have taken it. One that fits with them is written.
func TestOriginHeadersCountTowardsTheRecordLimit(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, func(c *Config) { c.OriginHeaders = true })
	limitRecords(t, s, topic, "1000")
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 3)
	r := recordOf(make([]byte, 880)) // 880 + 101 of framing fit 1000; with ~100 bytes of origin headers they do not
	r.Topic, r.Offset = "orders-input", 123456789
	if err := w.Write(ctx, r); !errors.Is(err, sink.ErrBadRecord) {
		t.Fatalf("Write of 880 bytes and origin headers under a limit of 1000: %v, want ErrBadRecord", err)
	}
	fits := recordOf(make([]byte, 700))
	fits.Topic = "orders-input"
	if err := w.Write(ctx, fits); err != nil {
		t.Fatalf("Write of 700 bytes and origin headers under a limit of 1000: %v", err)
	}
	write(t, w, 3, 10)
	cs := preCommit(t, w, 1)
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if got := committedValues(t, b, topic, 11); len(got) != 11 {
		t.Fatalf("visible: %d records, want the 10 and the one of 700 bytes", len(got))
	}
}

// TestRecordsForTopicsThatCannotTakeThemAreRefused: a topic_field naming a
// topic that does not exist is a bad record; same_as_input with a record
// of a partition the output topic lacks is a config problem (the job
// stops: the topic needs as many partitions as the input).
func TestRecordsForTopicsThatCannotTakeThemAreRefused(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 2)
	s := testSink(t, b, topic, topic, func(c *Config) { c.TopicField = "to" })
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	err := w.Write(ctx, recordOf([]byte(`{"to":"no-such-topic-here"}`)))
	if !errors.Is(err, sink.ErrBadRecord) || !strings.Contains(err.Error(), "topic no-such-topic-here (from topic_field to) does not exist") {
		t.Errorf("a record for a missing topic: %v, want ErrBadRecord naming it", err)
	}
	if err := w.Write(ctx, recordOf([]byte(`{"to":"`+topic+`"}`))); err != nil {
		t.Errorf("a record for an existing topic: %v", err)
	}

	same := testSink(t, b, topic+"-same", topic, func(c *Config) { c.Partitioning = PartitionSameInput })
	recover_(t, same, nil)
	sw := newTestWriter(t, same, 0)
	r := recordOf([]byte(`{}`))
	r.Partition = 5
	if err := sw.Write(ctx, r); !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "has 2 partitions") {
		t.Errorf("a record of partition 5 into 2 partitions: %v, want ErrInvalidConfig", err)
	}
	r.Partition = 1
	if err := sw.Write(ctx, r); err != nil {
		t.Errorf("a record of partition 1: %v", err)
	}
}

// TestALostProgressMarkerDoesNotProduceTwice: checkpoint 1 committed, then
// its writer's progress group vanished (expired after
// offsets.retention.minutes while the job was stopped, or deleted). A
// restart from checkpoint 1 finds the transaction's commit marker in the
// log and produces nothing again.
func TestALostProgressMarkerDoesNotProduceTwice(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 40)
	cs := preCommit(t, w, 1)
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.adm.DeleteGroups(ctx, progressGroup(topic, 0)); err != nil {
		t.Fatal(err)
	}
	if p, err := s.readProgress(ctx, true); err != nil || p[0] != 0 {
		t.Fatalf("progress after deleting the group: %v, %v; want none", p, err)
	}
	s2 := testSink(t, b, topic, topic, nil)
	recover_(t, s2, cs)
	if got := committedValues(t, b, topic, 40); !slices.Equal(got, values(0, 40)) {
		t.Fatalf("visible after the restart: %d records, want 40 once", len(got))
	}
	if s2.committed(0) != 1 {
		t.Errorf("progress after the restart: %d, want 1", s2.committed(0))
	}
}

// TestARestartReadsMarkersPendingInTransactionsTheCrashLeftOpen: the
// process commits checkpoint 1, pre-commits checkpoint 2 (its marker for
// 2 pending in an open transaction) and dies. Checkpoint 1's records are
// then deleted (retention). A restart from checkpoint 1 finds it committed
// (after aborting 2's transaction the marker reads 1, not "unstable" or
// none): it reads nothing back from the log, where 1 is gone.
func TestARestartReadsMarkersPendingInTransactionsTheCrashLeftOpen(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 20)
	cs := preCommit(t, w, 1)
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	w.Committed(1)
	write(t, w, 20, 30)
	preCommit(t, w, 2) // the crash comes before checkpoint 2 completes

	// Deleted below checkpoint 2's open transaction: up to the last stable
	// offset.
	adm := kafkatest.Admin(t, b)
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	del := kadm.Offsets{}
	lso.Each(func(o kadm.ListedOffset) {
		del.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	if resp, err := adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}

	s2 := testSink(t, b, topic, topic, nil)
	if after, err := s2.CommittedAfter(ctx, 1); err != nil || len(after) > 0 {
		t.Fatalf("CommittedAfter(1) = %v, %v; want nothing after 1, at once, with 2's marker pending", after, err)
	}
	recover_(t, s2, cs)
	if got := s2.committed(0); got != 1 {
		t.Fatalf("writer 0 committed checkpoint %d after recovery, want 1", got)
	}
	if got := s2.stats.commits.Load(); got != 0 {
		t.Fatalf("recovery produced %d transactions again, want none (checkpoint 1 was committed)", got)
	}
}

// TestATransactionTimeoutAboveTheBrokersMaximumIsAConfigFault: the
// brokers' transaction.max.timeout.ms is a static config (15 min by
// default), read from a named broker; a sink.transaction_timeout above it
// is refused at start as an invalid config.
func TestATransactionTimeoutAboveTheBrokersMaximumIsAConfigFault(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, func(c *Config) { c.TransactionTimeout = 16 * time.Minute })
	max, err := s.brokerConfig(ctx, "transaction.max.timeout.ms")
	if err != nil {
		t.Fatalf("brokerConfig: %v", err)
	}
	err = s.Recover(ctx, nil)
	if time.Duration(max)*time.Millisecond >= 16*time.Minute {
		t.Fatalf("the test broker's transaction.max.timeout.ms is %d ms: the test needs it below 16 min", max)
	}
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "sink.transaction_timeout 16m0s") {
		t.Fatalf("Recover = %v, want an invalid sink config naming sink.transaction_timeout 16m0s", err)
	}
}

// TestStatsNeverWaitsOnAWriterOpeningASlot: /metrics calls Stats while
// writers open transactions in new slots (making a slot's client reads
// the sink's topic cache under the sink's lock). Stats once held the
// sink's lock while taking each writer's, and a writer held its own while
// making the client: a scrape at that moment deadlocked both for good.
// Now neither holds both; many writers opening slots under a tight loop
// of Stats must all finish.
func TestStatsNeverWaitsOnAWriterOpeningASlot(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	stop := make(chan struct{})
	scraped := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				scraped <- n
				return
			default:
				s.Stats()
				n++
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		for i := range 40 {
			w, err := s.NewWriter(i)
			if err == nil {
				r := record.Record{Topic: "in", Value: []byte(`{"id":1}`)}
				err = w.Write(ctx, &r)
			}
			if err == nil {
				err = w.Close()
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("40 writers did not open and close a transaction within 60 s while Stats ran: deadlocked")
	}
	close(stop)
	t.Logf("Stats ran %d times meanwhile", <-scraped)
}

// TestASlotIsNotReusedRightAfterItsCommit: transactions take the slots
// round robin, so the slot whose transaction was just committed (the
// coordinator may still be writing its markers) is the last one taken
// again, not the next.
func TestASlotIsNotReusedRightAfterItsCommit(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	var slots []string
	for id := checkpoint.ID(1); id <= 3; id++ {
		write(t, w, 0, 5)
		cs := preCommit(t, w, id)
		if err := s.Commit(ctx, cs); err != nil {
			t.Fatal(err)
		}
		w.Committed(id)
		slots = append(slots, txnOf(t, cs[len(cs)-1]))
	}
	for i := 1; i < len(slots); i++ {
		if slots[i] == slots[i-1] {
			t.Fatalf("checkpoints' transactions took slots %v: a slot reused right after its commit", slots)
		}
	}
}

// topicConfigIs says whether the broker describes topic's key as value.
func topicConfigIs(t *testing.T, adm *kadm.Client, topic, key, value string) bool {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == key && kv.Value != nil {
			return *kv.Value == value
		}
	}
	return false
}

// TestARestartFencesTheIdleSlotsOfTheProcessBefore: a second process of a
// job initialises every transactional id of the job the brokers know, not
// only those with a transaction open: the first process's producers of
// slots that sit idle are fenced too, and its next checkpoint's output
// never shows. Before, they kept a valid epoch until the second process
// happened to open the same slot.
func TestARestartFencesTheIdleSlotsOfTheProcessBefore(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	var cs []sink.Committable
	for id := checkpoint.ID(1); id <= checkpoint.ID(s.slots); id++ { // every slot used once, then idle
		write(t, w, 0, 5)
		cs = preCommit(t, w, id)
		if err := s.Commit(ctx, cs); err != nil {
			t.Fatal(err)
		}
		w.Committed(id)
	}
	recover_(t, testSink(t, b, topic, topic, nil), cs) // the second process starts

	write(t, w, 100, 110)
	next := checkpoint.ID(s.slots + 1)
	if got, err := w.PreCommit(ctx, next); err == nil {
		if err := s.Commit(ctx, got); err == nil {
			t.Fatalf("the first process committed checkpoint %d after a second process of the job started: its idle slot's producer was not fenced", next)
		}
	}
	if got := committedValues(t, b, topic, 5*s.slots); len(got) != 5*s.slots {
		t.Fatalf("visible: %d records, want the %d of the checkpoints before the second process, none of the fenced one's", len(got), 5*s.slots)
	}
}
