// Command load produces the benchmark's load: a topic of N fixed-size JSON
// records, once. bench/run calls it before the contenders run; a topic that
// already holds exactly the right records is reused.
//
//	load --brokers 127.0.0.1:39092 --records 5000000 --size 100 [--partitions 8] [--prefix bench]
//	load --brokers 127.0.0.1:39092 --delete TOPIC,...   (tidy up)
//	load --brokers 127.0.0.1:39092 --create TOPIC [--partitions 8]   (an empty output topic)
//	load --layout rows --records 1000000 --prefix bench-pg ...   (rows of a typed table; see below)
//	load --layout rows --records 1000000 --copy-file DIR/part --parts 2   (the same rows as COPY text files)
//
// The topic is named <prefix>-v<format>-<size>b-<records> (for example
// bench-v2-100b-5000000; the Kafka-to-Kafka experiments use the prefix
// bench-k2k), so its name says what it holds; it is reused when it has the right number
// of partitions, starts at offset 0 and holds exactly N records, and is
// deleted and produced again otherwise. The name is printed on stdout.
//
// Record i (0 <= i < N), every value exactly --size bytes:
//
//	value:     {"id":"r0000000042","u":"u0000042","h":"h00042","amount":1234.56,"status":"paid","p":"xyz..."}
//	           id unique; u = i mod 1,000,000 and h = i mod 100,000 (dedup keys
//	           with 1M and 100k distinct values); p pads to the size
//	key:       "r0000000042" plus two digits chosen so that the connector's
//	           key shuffle (FNV-1a of the key, mod parallelism) sends every
//	           record with the same u and h to the same worker for
//	           parallelism 1, 2 and 4: dedup state then holds each distinct
//	           value once, whatever the parallelism. Keys stay unique.
//	partition: i mod --partitions, so records sharing u (or h) are in one
//	           partition, in order of i
//	timestamp: now - N ms + i ms: records sharing u are 1,000,000 ms apart
//	           (h: 100,000 ms), so a dedup with a TTL below that keeps every
//	           record and rewrites its key: the output holds all N records.
//
// The value layout is fixed: bench/cmd/bench reads the id at byte 7 of every
// output line to check that each record arrived exactly once.
//
// # Rows (--layout rows)
//
// For the PostgreSQL experiments (issue 13) every value maps to a row of a
// table with five typed columns (id bigint, u bigint, h bigint, ts
// timestamptz, pad text); the topic is <prefix>-rows-v<rowsFormat>-<size>b-<records>:
//
//	value:     {"id":42,"u":42,"h":42,"ts":"2026-01-01T00:00:00.042Z","pad":"xyz..."}
//	           u and h as above, ts = 2026-01-01T00:00:00Z + i ms (fixed, so
//	           that the COPY files hold exactly the same values), pad fills
//	           the value to --size bytes
//	key, partition, timestamp: as above (so record i goes to worker i mod P)
//
// --copy-file PATH writes the same rows, nothing to Kafka, as COPY text
// (tab-separated) files PATH-0.tsv ... PATH-<parts-1>.tsv: row i in file
// i mod --parts, in order of i, as the connector's workers receive them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", os.Getenv("KAFKA_BROKERS"), "Kafka `host:port` (default $KAFKA_BROKERS)")
	records := flag.Int("records", 5_000_000, "number of `records`")
	size := flag.Int("size", 100, "bytes per record value")
	partitions := flag.Int("partitions", 8, "partitions of the topic (a multiple of 4 keeps dedup keys on one worker)")
	prefix := flag.String("prefix", "bench", "the topic's name starts with this `prefix`")
	del := flag.String("delete", "", "delete these comma-separated `topics` and exit")
	create := flag.String("create", "", "create this empty `topic` (--partitions) and exit")
	layout := flag.String("layout", "orders", "value layout: orders (the file and Kafka benchmarks) or rows (the PostgreSQL ones: id, u, h, ts, pad)")
	copyFile := flag.String("copy-file", "", "rows layout: write the rows as COPY text files `PATH`-<n>.tsv instead of producing them, and exit")
	parts := flag.Int("parts", 1, "--copy-file: the number of files (row i goes to file i mod parts)")
	flag.Parse()
	valueOf := Value
	switch *layout {
	case "orders":
	case "rows":
		valueOf = RowValue
	default:
		fail(fmt.Errorf("--layout: orders or rows, not %q", *layout))
	}
	if *copyFile != "" {
		if *layout != "rows" || *records <= 0 || *parts <= 0 {
			fail(errors.New("--copy-file needs --layout rows, and positive --records and --parts"))
		}
		if err := writeCopyFiles(*copyFile, *records, *size, *parts); err != nil {
			fail(err)
		}
		return
	}
	if *brokers == "" {
		fail(errors.New("--brokers or KAFKA_BROKERS is required"))
	}
	if *del != "" {
		if err := deleteTopics(*brokers, strings.Split(*del, ",")); err != nil {
			fail(err)
		}
		return
	}
	if *create != "" {
		if err := createTopic(*brokers, *create, int32(*partitions)); err != nil {
			fail(err)
		}
		return
	}
	if *records <= 0 || *partitions <= 0 {
		fail(errors.New("--records and --partitions must be positive"))
	}
	for _, i := range []int{0, *records - 1} {
		if v, err := valueOf(nil, i, *size); err != nil {
			fail(err)
		} else if !json.Valid(v) {
			fail(fmt.Errorf("record %d is not valid JSON: %s", i, v))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	topic := fmt.Sprintf("%s-v%d-%db-%d", *prefix, format, *size, *records)
	if *layout == "rows" {
		topic = fmt.Sprintf("%s-rows-v%d-%db-%d", *prefix, rowsFormat, *size, *records)
	}
	if err := run(ctx, *brokers, topic, *records, *size, int32(*partitions), valueOf); err != nil {
		fail(err)
	}
	fmt.Println(topic)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "load: %v\n", err)
	os.Exit(1)
}

// valueFunc appends record i's value of size bytes to b.
type valueFunc func(b []byte, i, size int) ([]byte, error)

func run(ctx context.Context, brokers, topic string, n, size int, partitions int32, valueOf valueFunc) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerLinger(50*time.Millisecond),
		kgo.MaxBufferedRecords(1<<20),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	ok, why, err := holds(ctx, adm, topic, int64(n), partitions)
	if err != nil {
		return err
	}
	if ok {
		fmt.Fprintf(os.Stderr, "load: reusing %s (%d records)\n", topic, n)
		return nil
	}
	fmt.Fprintf(os.Stderr, "load: producing %s: %s\n", topic, why)
	if err := recreate(ctx, adm, topic, partitions); err != nil {
		return err
	}
	began := time.Now()
	if err := produce(ctx, cl, topic, n, size, partitions, valueOf); err != nil {
		return err
	}
	took := time.Since(began)
	fmt.Fprintf(os.Stderr, "load: produced %d records of %d B to %s in %.1fs (%.0f records/s)\n",
		n, size, topic, took.Seconds(), float64(n)/took.Seconds())
	if ok, why, err := holds(ctx, adm, topic, int64(n), partitions); err != nil || !ok {
		return fmt.Errorf("after producing, %s is not as expected: %s %v", topic, why, err)
	}
	return nil
}

// holds reports whether topic exists with the given partitions, every one
// starting at offset 0, and n records in all; why says what is wrong.
func holds(ctx context.Context, adm *kadm.Client, topic string, n int64, partitions int32) (bool, string, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false, "", fmt.Errorf("list topics: %w", err)
	}
	d, found := details[topic]
	if !found || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return false, "the topic does not exist", nil
	}
	if d.Err != nil {
		return false, "", fmt.Errorf("topic %s: %w", topic, d.Err)
	}
	if int32(len(d.Partitions)) != partitions {
		return false, fmt.Sprintf("it has %d partitions, not %d", len(d.Partitions), partitions), nil
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return false, "", fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false, "", fmt.Errorf("list end offsets: %w", err)
	}
	var total int64
	var bad error
	starts.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 0 {
			bad = fmt.Errorf("partition %d starts at %d (%v)", o.Partition, o.Offset, o.Err)
		}
	})
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			bad = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
		total += o.Offset
	})
	if bad != nil {
		return false, bad.Error(), nil
	}
	if total != n {
		return false, fmt.Sprintf("it holds %d records, not %d", total, n), nil
	}
	return true, "", nil
}

// recreate deletes topic if it exists and creates it anew, retrying while
// the broker still finishes the deletion.
func recreate(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	if _, err := adm.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("delete %s: %w", topic, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := adm.CreateTopic(ctx, partitions, 1, map[string]*string{"retention.ms": ptr("-1")}, topic)
		if err == nil {
			return nil
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) || time.Now().After(deadline) {
			return fmt.Errorf("create %s: %w", topic, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func deleteTopics(brokers string, topics []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).DeleteTopics(context.Background(), topics...)
	if err != nil {
		return err
	}
	for _, r := range res.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete %s: %w", r.Topic, r.Err)
		}
		fmt.Fprintf(os.Stderr, "load: deleted %s\n", r.Topic)
	}
	return nil
}

func createTopic(brokers, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	fmt.Fprintf(os.Stderr, "load: created %s (%d partitions)\n", topic, partitions)
	return nil
}

func ptr[T any](v T) *T { return &v }

func produce(ctx context.Context, cl *kgo.Client, topic string, n, size int, partitions int32, valueOf valueFunc) error {
	base := time.Now().Add(-time.Duration(n) * time.Millisecond).Truncate(time.Millisecond)
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	for i := range n {
		if e := failed.Load(); e != nil {
			return fmt.Errorf("produce: %w", *e)
		}
		v, _ := valueOf(make([]byte, 0, size), i, size)
		r := &kgo.Record{
			Topic:     topic,
			Partition: int32(i % int(partitions)),
			Key:       Key(i),
			Value:     v,
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		cl.Produce(ctx, r, done)
		if i%1_000_000 == 999_999 {
			fmt.Fprintf(os.Stderr, "load: %s: %d records\n", topic, i+1)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if e := failed.Load(); e != nil {
		return fmt.Errorf("produce: %w", *e)
	}
	return nil
}

const (
	// format is the version of the record layout, part of the topic name:
	// change it with the layout so that no old topic is reused.
	format = 2

	// rowsFormat is the version of the rows layout (--layout rows).
	rowsFormat = 1

	uMod = 1_000_000
	hMod = 100_000
)

// rowsEpoch is ts of row 0 in the rows layout.
var rowsEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RowValue appends record i's value in the rows layout, exactly size
// bytes, to b: {"id":42,"u":42,"h":42,"ts":"2026-01-01T00:00:00.042Z","pad":"..."}.
func RowValue(b []byte, i, size int) ([]byte, error) {
	pad, err := rowPad(i, size)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"u":`...)
	b = strconv.AppendInt(b, int64(i%uMod), 10)
	b = append(b, `,"h":`...)
	b = strconv.AppendInt(b, int64(i%hMod), 10)
	b = append(b, `,"ts":"`...)
	b = appendTS(b, i)
	b = append(b, `","pad":"`...)
	b = appendPad(b, i, pad)
	return append(b, `"}`...), nil
}

// RowLine appends row i as a line of COPY's text format (tab-separated,
// the columns id, u, h, ts, pad): the values of RowValue(i, size).
func RowLine(b []byte, i, size int) ([]byte, error) {
	pad, err := rowPad(i, size)
	if err != nil {
		return nil, err
	}
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(i%uMod), 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(i%hMod), 10)
	b = append(b, '\t')
	b = appendTS(b, i)
	b = append(b, '\t')
	b = appendPad(b, i, pad)
	return append(b, '\n'), nil
}

// tsLen is the length of a ts value (appendTS).
const tsLen = len("2026-01-01T00:00:00.000Z")

// rowPad is the length of row i's pad at size bytes of value.
func rowPad(i, size int) (int, error) {
	fixed := len(`{"id":,"u":,"h":,"ts":"","pad":""}`) + tsLen + digits(i) + digits(i%uMod) + digits(i%hMod)
	if fixed > size {
		return 0, fmt.Errorf("--size %d is too small: row %d needs at least %d bytes", size, i, fixed)
	}
	return size - fixed, nil
}

func digits(v int) int {
	n := 1
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

func appendTS(b []byte, i int) []byte {
	return rowsEpoch.Add(time.Duration(i)*time.Millisecond).AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
}

func appendPad(b []byte, i, n int) []byte {
	for j := range n {
		b = append(b, byte('a'+(i+j)%26))
	}
	return b
}

// writeCopyFiles writes rows 0..n-1 (RowLine) into parts files
// <path>-<k>.tsv, row i into file i mod parts.
func writeCopyFiles(path string, n, size, parts int) error {
	began := time.Now()
	var total int64
	for k := range parts {
		name := fmt.Sprintf("%s-%d.tsv", path, k)
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		line := make([]byte, 0, 256)
		for i := k; i < n; i += parts {
			if line, err = RowLine(line[:0], i, size); err != nil {
				f.Close()
				return err
			}
			w.Write(line)
			total += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "load: wrote %d rows (%d bytes) into %s-{0..%d}.tsv in %.1fs\n", n, total, path, parts-1, time.Since(began).Seconds())
	return nil
}

// Value appends record i's value, exactly size bytes, to b.
func Value(b []byte, i, size int) ([]byte, error) {
	b = append(b, `{"id":"r`...)
	b = appendDigits(b, i, 10)
	b = append(b, `","u":"u`...)
	b = appendDigits(b, i%uMod, 7)
	b = append(b, `","h":"h`...)
	b = appendDigits(b, i%hMod, 5)
	b = append(b, `","amount":`...)
	b = strconv.AppendInt(b, int64(1000+(i*7919)%9000), 10) // 4 digits, no leading zero
	b = append(b, '.')
	b = appendDigits(b, i%100, 2)
	b = append(b, `,"status":"paid","p":"`...)
	pad := size - len(b) - len(`"}`)
	if pad < 0 {
		return nil, fmt.Errorf("--size %d is too small: a record needs at least %d bytes", size, len(b)+2)
	}
	for j := range pad {
		b = append(b, byte('a'+(i+j)%26))
	}
	return append(b, `"}`...), nil
}

func appendDigits(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// Key is record i's key: "r" and i in 10 digits, then the first two digits
// for which the connector's worker hash (pipeline.workerFor: FNV-1a, mod
// parallelism) of the key is i mod 4, so that all records with the same u
// and h (which share i mod 4) go to the same worker for parallelism 1, 2 and
// 4. With another hash the keys are still unique; state is merely spread.
func Key(i int) []byte {
	k := appendDigits([]byte{'r'}, i, 10)
	k = append(k, '0', '0')
	for d := range 100 {
		k[len(k)-2], k[len(k)-1] = byte('0'+d/10), byte('0'+d%10)
		if fnv1a(k)%4 == uint64(i%4) {
			break
		}
	}
	return k
}

func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
