package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/sink"
)

// TestGroupPartitionIsKafkasPartitionOfTheGroup: the partition of
// __consumer_offsets holding a group, as Kafka computes it
// (Utils.abs(group.hashCode()) % 50); the expected values are Java's,
// printed by java.lang.String.hashCode on Java 17.
func TestGroupPartitionIsKafkasPartitionOfTheGroup(t *testing.T) {
	for group, want := range map[string]int32{
		"e2e-KafkaSinkExactlyOnceAcrossABrokerRestart-741954-1.sink-progress.w0": 2,
		"a":                  47,
		"polygenelubricants": 0, // hashCode is Integer.MIN_VALUE: Utils.abs makes it 0
		"größe-ü":            12,
		"x.sink-progress.w1": 23,
	} {
		if got := groupPartition(group, 50); got != want {
			t.Errorf("groupPartition(%q, 50) = %d, want %d", group, got, want)
		}
	}
}

// TestATransactionThatHangsIsEndedAndItsRecordsCommittedOnce: a restored
// segment's transaction hangs (its producer holds it open in the
// partitions it wrote, the coordinator holds none open: what a broker
// restart left in the e2e broker-restart test). Recover finds it hanging,
// ends it there with abort markers, and produces its records again: each
// visible once, and the partitions stable again.
//
// The hanging transaction is made for real: the segment's records go in
// by a raw transactional Produce (version 11, before KIP-890's implicit
// add) of a producer whose coordinator never heard of the partitions,
// while the cluster's transaction.partition.verification.enable is off
// (until the broker takes the two produces, a second or two here). Kafka
// skips verification only for Produce version 11 and older; the
// connector's own producers (franz-go, transaction.version 2) do not use
// it, so tests that run meanwhile lose nothing.
func TestATransactionThatHangsIsEndedAndItsRecordsCommittedOnce(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	job := topic
	txnID := job + "-w0-t0"
	// The producer: initialised, with no transaction at the coordinator.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.TransactionalID(txnID))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	pid, epoch, err := pcl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seg := segment{TxnID: txnID, ProducerID: pid, Epoch: epoch}
	withoutVerification(t, b, func(raw *kgo.Client) {
		for p, ids := range map[int32][2]int{0: {0, 25}, 1: {25, 40}} {
			first := produceRawTxn(t, raw, txnID, topic, p, pid, epoch, ids[0], ids[1])
			seg.Ranges = append(seg.Ranges, prange{Topic: topic, Partition: p, First: first, Last: first + int64(ids[1]-ids[0]) - 1})
			seg.Records += int64(ids[1] - ids[0])
		}
	})
	slices.SortFunc(seg.Ranges, func(a, b prange) int { return int(a.Partition - b.Partition) })
	c, err := encodeSegment(1, 0, seg)
	if err != nil {
		t.Fatal(err)
	}
	s := testSink(t, b, job, topic, nil)
	if _, err := s.adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}}); err != nil {
		t.Fatal(err)
	}
	if n := openAt(t, s, topic, 0, pid); n != seg.Ranges[0].First {
		t.Fatalf("before Recover: producer %d's transaction open in partition 0 from %d, want %d (the hanging transaction was not made)", pid, n, seg.Ranges[0].First)
	}
	recoverHanging(t, b, s, topic, c)
	for _, p := range []int32{0, 1} {
		if n := openAt(t, s, topic, p, pid); n >= 0 {
			t.Errorf("after Recover: producer %d still holds a transaction open in partition %d from %d", pid, p, n)
		}
	}
	if got := s.stats.commits.Load(); got != 1 {
		t.Errorf("Recover produced %d transactions again, want 1 (the hanging one, aborted)", got)
	}
	if s.committed(0) != 1 {
		t.Errorf("progress after recovery: %d, want 1", s.committed(0))
	}
}

// TestATransactionThatHangsWhereItCommittedElsewhereIsCommitted: the
// segment's transaction committed in one partition (its records visible
// there) and hangs in another. Recover ends it with commit markers where
// it hangs, as the rest of it shows: every record visible once, none
// produced again.
func TestATransactionThatHangsWhereItCommittedElsewhereIsCommitted(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	c, pid := committedButHanging(t, b, s, topic, false)
	recoverHanging(t, b, s, topic, c)
	if n := openAt(t, s, topic, 0, pid); n >= 0 {
		t.Errorf("after Recover: producer %d still holds a transaction open in partition 0 from %d", pid, n)
	}
	if got := s.stats.commits.Load(); got != 0 {
		t.Errorf("Recover produced %d transactions again, want none (the transaction committed)", got)
	}
}

// TestATransactionThatHangsAfterItsProgressCommittedIsCommittedWhereItHangs:
// as above, with the progress marker of the segment's checkpoint committed
// in the transaction, so Recover reads no segment back: it asks the
// partitions' leaders, and ends the transaction with a commit marker where
// it hangs. Every record visible once, none produced again, the partition
// stable.
func TestATransactionThatHangsAfterItsProgressCommittedIsCommittedWhereItHangs(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	c, pid := committedButHanging(t, b, s, topic, true)
	if got, err := s.readProgress(ctx, true); err != nil || got[0] != 1 {
		t.Fatalf("before Recover: stable progress %v (%v), want writer 0 at checkpoint 1 (Recover would read the segment back)", got, err)
	}
	recoverHanging(t, b, s, topic, c)
	if n := openAt(t, s, topic, 0, pid); n >= 0 {
		t.Errorf("after Recover: producer %d still holds a transaction open in partition 0 from %d", pid, n)
	}
	if got := s.stats.commits.Load(); got != 0 {
		t.Errorf("Recover produced %d transactions again, want none (the transaction committed)", got)
	}
	if s.committed(0) != 1 {
		t.Errorf("progress after recovery: %d, want 1", s.committed(0))
	}
}

// committedButHanging makes the segment of checkpoint 1, writer 0 of s's
// job: a transaction of its writer 0's first slot id that committed the
// ids 25-39 in partition 2 (and, if marked, the progress marker of
// checkpoint 1) and hangs in partition 0 with the ids 0-24 (a raw produce
// of the same producer and epoch after the commit, see
// TestATransactionThatHangsIsEndedAndItsRecordsCommittedOnce). It returns
// the segment's committable and its producer id.
func committedButHanging(t *testing.T, b kafkatest.Brokers, s *Sink, topic string, marked bool) (sink.Committable, int64) {
	t.Helper()
	txnID := s.txnID(0, 0)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var committed prange
	for i := 25; i < 40; i++ {
		r := &kgo.Record{Topic: topic, Partition: 2, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id":%d}`, i)}
		if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if i == 25 {
			committed = prange{Topic: topic, Partition: 2, First: r.Offset}
		}
		committed.Last = r.Offset
	}
	if marked {
		if err := s.prepare(ctx); err != nil { // the topic's id, for the marker
			t.Fatal(err)
		}
		if err := s.addMarker(ctx, &txn{id: txnID, cl: pcl, writer: 0}, 1); err != nil {
			t.Fatal(err)
		}
	}
	pid, epoch, err := pcl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	seg := segment{TxnID: txnID, ProducerID: pid, Epoch: epoch, Records: 40, Ranges: []prange{{}, committed}}
	withoutVerification(t, b, func(raw *kgo.Client) {
		first := produceRawTxn(t, raw, txnID, topic, 0, pid, epoch, 0, 25)
		seg.Ranges[0] = prange{Topic: topic, Partition: 0, First: first, Last: first + 24}
	})
	c, err := encodeSegment(1, 0, seg)
	if err != nil {
		t.Fatal(err)
	}
	if n := openAt(t, s, topic, 0, pid); n != seg.Ranges[0].First {
		t.Fatalf("producer %d's transaction open in partition 0 from %d, want %d (the hanging transaction was not made)", pid, n, seg.Ranges[0].First)
	}
	return c, pid
}

// recoverHanging runs Recover over c, the segment of a hanging
// transaction of the ids 0-39 in topic, with a short wait for markers,
// and checks that each of the 40 records is visible once after it.
func recoverHanging(t *testing.T, b kafkatest.Brokers, s *Sink, topic string, c sink.Committable) {
	t.Helper()
	s.markerWait = 2 * time.Second
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := s.Recover(rctx, []sink.Committable{c}); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if got := committedValues(t, b, topic, 40); !slices.Equal(got, values(0, 40)) {
		t.Fatalf("visible after recovery: %d records, want the 40 of the hanging transaction once", len(got))
	}
}

// openAt is where producer pid's transaction opens in topic/p per the
// partition's leader, -1 if it holds none open there.
func openAt(t *testing.T, s *Sink, topic string, p int32, pid int64) int64 {
	t.Helper()
	d, err := s.adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if pp, ok := d[topic].Partitions[p].ActiveProducers[pid]; ok {
		return pp.CurrentTxnStartOffset
	}
	return -1
}

// withoutVerification runs fn with the cluster's
// transaction.partition.verification.enable off, and a client that speaks
// Produce version 11 at most.
func withoutVerification(t *testing.T, b kafkatest.Brokers, fn func(raw *kgo.Client)) {
	t.Helper()
	acl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	const key = "transaction.partition.verification.enable"
	alter := func(what string, c kadm.AlterConfig) {
		resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{c})
		if err == nil {
			for _, r := range resp {
				if r.Err != nil && err == nil {
					err = fmt.Errorf("%w %s", r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			t.Fatalf("%s %s: %v", what, key, err)
		}
	}
	// Back to the broker's default (on) at the end, and at the start too:
	// a run killed by go test's timeout runs no defer.
	on := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
	alter("reset", on)
	off := "false"
	alter("turn off", kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &off})
	defer alter("turn back on", on)
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11) // Produce
	raw, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The change reaches the broker through the metadata log: retried
	// until a produce is taken.
	fn(raw)
}

// produceRawTxn writes the records write(from, to) would, as one
// transactional batch of producer pid at epoch (sequence 0) to topic/p,
// retrying while the broker still verifies; it returns the batch's first
// offset.
func produceRawTxn(t *testing.T, raw *kgo.Client, txnID, topic string, p int32, pid int64, epoch int16, from, to int) int64 {
	t.Helper()
	var recs []byte
	now := time.Now().UnixMilli()
	for i := from; i < to; i++ {
		r := kmsg.Record{OffsetDelta: int32(i - from), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id":%d}`, i)}
		body := r.AppendTo(nil)[1:] // without the zero Length varint
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	batch := kmsg.RecordBatch{
		Magic: 2, Attributes: 0x10, // transactional
		LastOffsetDelta: int32(to - from - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: 0, NumRecords: int32(to - from), Records: recs,
	}
	batch.Length = int32(len(batch.AppendTo(nil)) - 12) // what follows FirstOffset and Length
	enc := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[17:21], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID = &txnID
		req.Acks = -1
		req.TimeoutMillis = 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = enc
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatalf("raw produce to %s/%d: %v", topic, p, err)
		}
		pr := resp.Topics[0].Partitions[0]
		err = kerr.ErrorForCode(pr.ErrorCode)
		if err == nil {
			return pr.BaseOffset
		}
		if time.Now().After(deadline) {
			t.Fatalf("raw transactional produce to %s/%d (producer %d, epoch %d): %v (is transaction.partition.verification.enable still on?)", topic, p, pid, epoch, err)
		}
		// Each attempt is the check: the broker takes the config change
		// (withoutVerification) on its own time, and the produce is
		// refused until it has; the pause only spaces the attempts.
		time.Sleep(200 * time.Millisecond)
	}
}
