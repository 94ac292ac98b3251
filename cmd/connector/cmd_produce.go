package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/source/kafka"
)

func init() {
	register("produce", command{
		summary: "produce sample orders (dev's generator) to the job's source topic, creating it if missing",
		run:     runProduce,
	})
}

// runProduce: connector produce --config FILE [--rate N] [--count N]
// [--partitions N] [--wait D]. It connects as the job does (kafka: section,
// TLS and SASL included), waits for the cluster up to --wait, creates the
// first source topic if it does not exist, then produces sample orders
// until --count were acknowledged or it is stopped. For docker compose's
// sample producer, and for trying a job against a real cluster.
func runProduce(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("produce", "--config FILE [--rate N] [--count N]", stdout, stderr)
	path := configFlag(fs)
	rate := fs.Int("rate", 1000, "sample orders per `second` (0: as fast as possible)")
	count := fs.Int64("count", 0, "stop after this many orders (0: until stopped)")
	partitions := fs.Int("partitions", 4, "partitions of the topic when it has to be created")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the cluster to answer")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *rate < 0 || *count < 0 || *partitions < 1 {
		fmt.Fprintf(stderr, "connector produce: --rate and --count must not be negative, --partitions at least 1\n")
		return exitUsage
	}
	job, ok := loadJob(*path, stderr)
	if !ok {
		return exitUsage
	}
	src, ok := job.Source.Config.(*kafka.Config)
	if !ok {
		fmt.Fprintf(stderr, "connector produce: %s: source type %q: produce writes to a kafka source's topic\n", *path, job.Source.Type)
		return exitUsage
	}
	topic := src.Topics[0]
	cl, err := kgo.NewClient(kafkaclient.Opts(job.Kafka, zerolog.New(stderr).Level(zerolog.WarnLevel))...)
	if err != nil {
		fmt.Fprintf(stderr, "connector produce: %v\n", err)
		return exitUsage
	}
	defer cl.Close()
	if err := ensureTopic(ctx, kadm.NewClient(cl), topic, int32(*partitions), *wait); err != nil {
		fmt.Fprintf(stderr, "connector produce: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "producing sample orders to %s at %d/s\n", topic, *rate)
	sent, err := produceOrders(ctx, cl, topic, *rate, *count)
	if err != nil {
		fmt.Fprintf(stderr, "connector produce: after %d orders: %v\n", sent, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "produced %d sample orders to %s\n", sent, topic)
	return exitOK
}

// ensureTopic waits (up to wait) for the cluster to answer and creates
// topic with partitions if it does not exist.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := tryEnsureTopic(ctx, adm, topic, partitions)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func tryEnsureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(tctx, topic)
	if err != nil {
		return fmt.Errorf("list topic %s: %w", topic, err)
	}
	if topics.Has(topic) {
		return nil
	}
	res, err := adm.CreateTopic(tctx, partitions, -1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}
