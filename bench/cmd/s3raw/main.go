// Command s3raw is the ceiling of the benchmark's Kafka-to-S3 experiments
// (bench/run --only raw-s3): franz-go consumers read a topic from the
// beginning, as bench/cmd/raw does, and upload the values as jsonl (each
// value and a newline) to an S3 bucket with minio-go multipart uploads:
// no checkpoints, no state, no exactly-once bookkeeping, nothing but the
// bytes.
//
//	s3raw --brokers 127.0.0.1:39092 --topic bench-v2-100b-10000000 --records 10000000 \
//	  --endpoint http://127.0.0.1:39910 --bucket b --prefix out/ [--clients 2] [--part-size 16MiB] [--roll-size 128MiB]
//
// Each client (as many as --clients; partition p goes to client p mod
// clients) appends the values it reads to a buffer and hands it over
// once it holds --part-size bytes (a part ends with a whole line, so an
// object holds whole lines) to an uploader goroutine of its own, which
// uploads them as the next part of its open object (minio-go's Core
// PutObjectPart, as the connector's s3 sink does; a client waits with a
// full part while one is queued, as the sink's writers do) and completes the object
// once it holds --roll-size bytes. When a client has read every record of
// its partitions (their end offsets, listed at the start), its last bytes
// become the last part and its object is completed. Objects are named
// <prefix>part-c<client>-<n>.jsonl.
//
// --make-bucket NAME and --drop-bucket NAME (with --endpoint only) make a
// bucket, or delete one with its objects and unfinished uploads, and exit
// (bench/profile's).
//
// Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. On exit it
// prints one JSON line on stdout: {"records":N,"bytes":B,"objects":O,
// "first_s":F,"seconds":S}: F from the start to the first record read, S
// from the start to the last object completed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	brokers, topic       string
	records              int64
	clients              int
	endpoint, bucket     string
	prefix, region       string
	partSize, rollSize   int64
	accessKey, secretKey string
}

func main() {
	var o options
	flag.StringVar(&o.brokers, "brokers", os.Getenv("KAFKA_BROKERS"), "Kafka `host:port` (default $KAFKA_BROKERS)")
	flag.StringVar(&o.topic, "topic", "", "`topic` to read")
	flag.Int64Var(&o.records, "records", 0, "the topic's `records` (the run fails if it reads a different number)")
	flag.IntVar(&o.clients, "clients", 1, "parallel consumers, each with an uploader, owning a share of the partitions")
	flag.StringVar(&o.endpoint, "endpoint", os.Getenv("S3_ENDPOINT"), "the S3 server, http://host:port (default $S3_ENDPOINT)")
	flag.StringVar(&o.bucket, "bucket", "", "the `bucket` (must exist)")
	flag.StringVar(&o.prefix, "prefix", "out/", "key `prefix` of the objects")
	flag.StringVar(&o.region, "region", "us-east-1", "the bucket's `region`")
	partSize := flag.Int64("part-size", 16<<20, "multipart part size in `bytes` (the s3 sink's default part_size)")
	rollSize := flag.Int64("roll-size", 128<<20, "complete an object once it holds this many `bytes` (the s3 sink's default roll_size)")
	makeBucket := flag.String("make-bucket", "", "make this `bucket` and exit")
	dropBucket := flag.String("drop-bucket", "", "delete this `bucket`, its objects and unfinished uploads, and exit")
	flag.Parse()
	o.partSize, o.rollSize = *partSize, *rollSize
	o.accessKey, o.secretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if *makeBucket != "" || *dropBucket != "" {
		if err := bucketOp(o, *makeBucket, *dropBucket); err != nil {
			fmt.Fprintf(os.Stderr, "s3raw: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if o.brokers == "" || o.topic == "" || o.records <= 0 || o.clients <= 0 || o.endpoint == "" || o.bucket == "" {
		fmt.Fprintln(os.Stderr, "s3raw: --brokers, --topic, a positive --records, --endpoint and --bucket are required")
		os.Exit(2)
	}
	if o.partSize < 5<<20 || o.rollSize < o.partSize {
		fmt.Fprintln(os.Stderr, "s3raw: --part-size must be at least 5 MiB and --roll-size at least --part-size")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "s3raw: %v\n", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// bucketOp makes bucket mk or deletes bucket drop.
func bucketOp(o options, mk, drop string) error {
	core, err := newCore(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if mk != "" {
		return core.MakeBucket(ctx, mk, minio.MakeBucketOptions{Region: o.region})
	}
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for obj := range core.Client.ListObjects(ctx, drop, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil {
				objs <- obj
			}
		}
	}()
	var errs []error
	for e := range core.RemoveObjects(ctx, drop, objs, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("delete %s: %w", e.ObjectName, e.Err))
	}
	for u := range core.ListIncompleteUploads(ctx, drop, "", true) {
		if u.Err == nil {
			errs = append(errs, core.RemoveIncompleteUpload(ctx, drop, u.Key))
		}
	}
	return errors.Join(append(errs, core.RemoveBucket(ctx, drop))...)
}

type result struct {
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	Objects int64   `json:"objects"`
	First   float64 `json:"first_s"`
	Seconds float64 `json:"seconds"`
}

func newCore(o options) (*minio.Core, error) {
	u, err := url.Parse(o.endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--endpoint %q: want http://host:port", o.endpoint)
	}
	return minio.NewCore(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(o.accessKey, o.secretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       o.region,
		BucketLookup: minio.BucketLookupPath,
	})
}

func run(ctx context.Context, o options) (result, error) {
	began := time.Now()
	core, err := newCore(o)
	if err != nil {
		return result{}, err
	}
	if ok, err := core.BucketExists(ctx, o.bucket); err != nil || !ok {
		return result{}, fmt.Errorf("bucket %s at %s: exists %v, %v", o.bucket, o.endpoint, ok, err)
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(o.brokers))
	if err != nil {
		return result{}, err
	}
	adm := kadm.NewClient(admin)
	starts, err := adm.ListStartOffsets(ctx, o.topic)
	if err == nil {
		var ends kadm.ListedOffsets
		ends, err = adm.ListEndOffsets(ctx, o.topic)
		if err == nil {
			err = errors.Join(starts.Error(), ends.Error())
		}
		if err == nil {
			return consume(ctx, o, core, starts, ends, began)
		}
	}
	admin.Close()
	return result{}, fmt.Errorf("list offsets of %s: %w", o.topic, err)
}

// part is one part handed to an uploader; last completes the object after
// it (the client's final part).
type part struct {
	data []byte
	last bool
}

func consume(ctx context.Context, o options, core *minio.Core, starts, ends kadm.ListedOffsets, began time.Time) (result, error) {
	type share struct {
		from map[int32]kgo.Offset
		end  map[int32]int64 // the partitions' end offsets
	}
	shares := make([]share, o.clients)
	for i := range shares {
		shares[i] = share{from: map[int32]kgo.Offset{}, end: map[int32]int64{}}
	}
	starts.Each(func(l kadm.ListedOffset) {
		e, _ := ends.Lookup(o.topic, l.Partition)
		if e.Offset > l.Offset {
			s := shares[int(l.Partition)%o.clients]
			s.from[l.Partition] = kgo.NewOffset().At(l.Offset)
			s.end[l.Partition] = e.Offset
		}
	})
	var (
		nrec, nbytes, nobj atomic.Int64
		firstAt            atomic.Int64
		wg                 sync.WaitGroup
		errMu              sync.Mutex
		firstErr           error
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel()
	}
	for i, sh := range shares {
		if len(sh.from) == 0 {
			continue
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(o.brokers),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: sh.from}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.FetchMaxWait(200*time.Millisecond),
		)
		if err != nil {
			return result{}, err
		}
		defer cl.Close()
		// One part uploading, one queued, one filling: the client waits
		// with a full part while one is queued, as the sink's writers do.
		parts := make(chan part, 1)
		up := &uploader{o: o, core: core, client: i, objects: &nobj}
		wg.Go(func() {
			for p := range parts {
				if err := up.put(cctx, p); err != nil {
					fail(err)
					for range parts {
					}
					return
				}
			}
		})
		wg.Go(func() {
			defer close(parts)
			left := len(sh.end)
			buf := make([]byte, 0, o.partSize+1<<20)
			send := func(last bool) bool {
				select {
				case parts <- part{data: buf, last: last}:
					buf = make([]byte, 0, o.partSize+1<<20)
					return true
				case <-cctx.Done():
					return false
				}
			}
			for left > 0 && cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachError(func(t string, p int32, err error) {
					if !errors.Is(err, context.Canceled) {
						fail(fmt.Errorf("fetch %s/%d: %w", t, p, err))
					}
				})
				if !fs.Empty() && firstAt.Load() == 0 {
					firstAt.CompareAndSwap(0, int64(time.Since(began)))
				}
				var r, b int64
				ok := true
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					for _, rec := range p.Records {
						if !ok {
							return
						}
						buf = append(buf, rec.Value...)
						buf = append(buf, '\n')
						r++
						b += int64(len(rec.Value))
						if end, found := sh.end[p.Partition]; found && rec.Offset+1 >= end {
							delete(sh.end, p.Partition)
							left--
						}
						// A part ends with a whole line (an object, which
						// ends with a part, holds whole lines only).
						if int64(len(buf)) >= o.partSize {
							ok = send(false)
						}
					}
				})
				nrec.Add(r)
				nbytes.Add(b)
				if !ok {
					return
				}
			}
			if cctx.Err() == nil {
				send(true)
			}
		})
	}
	wg.Wait()
	end := time.Now()
	if firstErr != nil {
		return result{}, firstErr
	}
	if ctx.Err() != nil {
		return result{}, fmt.Errorf("stopped after %d of %d records", nrec.Load(), o.records)
	}
	if nrec.Load() != o.records {
		return result{}, fmt.Errorf("read %d records, not %d", nrec.Load(), o.records)
	}
	return result{Records: nrec.Load(), Bytes: nbytes.Load(), Objects: nobj.Load(),
		First: time.Duration(firstAt.Load()).Seconds(), Seconds: end.Sub(began).Seconds()}, nil
}

// uploader is one client's: its open object's multipart upload.
type uploader struct {
	o       options
	core    *minio.Core
	client  int
	objects *atomic.Int64

	n     int // objects begun
	key   string
	id    string
	size  int64
	parts []minio.CompletePart
}

// put uploads p as the next part of the open object (beginning one if
// none is open), and completes the object once it reaches the roll size
// or p is the last part.
func (u *uploader) put(ctx context.Context, p part) error {
	if len(p.data) > 0 {
		if u.id == "" {
			u.key = fmt.Sprintf("%spart-c%d-%04d.jsonl", u.o.prefix, u.client, u.n)
			u.n++
			id, err := u.core.NewMultipartUpload(ctx, u.o.bucket, u.key, minio.PutObjectOptions{ContentType: "application/x-ndjson"})
			if err != nil {
				return fmt.Errorf("create upload of %s: %w", u.key, err)
			}
			u.id, u.size, u.parts = id, 0, nil
		}
		n := len(u.parts) + 1
		op, err := u.core.PutObjectPart(ctx, u.o.bucket, u.key, u.id, n, bytes.NewReader(p.data), int64(len(p.data)), minio.PutObjectPartOptions{})
		if err != nil {
			return fmt.Errorf("upload part %d of %s: %w", n, u.key, err)
		}
		u.parts = append(u.parts, minio.CompletePart{PartNumber: n, ETag: op.ETag})
		u.size += int64(len(p.data))
	}
	if u.id != "" && (p.last || u.size >= u.o.rollSize) {
		if _, err := u.core.CompleteMultipartUpload(ctx, u.o.bucket, u.key, u.id, u.parts, minio.PutObjectOptions{}); err != nil {
			return fmt.Errorf("complete %s: %w", u.key, err)
		}
		u.objects.Add(1)
		u.id = ""
	}
	return nil
}
