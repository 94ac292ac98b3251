package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDevRunsTheKafkaToKafkaExample: `connector dev` runs
// examples/kafka-to-kafka.yaml on the embedded broker (the sink's topic
// created beside the source's), commits transactions while it runs, and
// stops after a final checkpoint.
func TestDevRunsTheKafkaToKafkaExample(t *testing.T) {
	example, err := filepath.Abs("../../examples/kafka-to-kafka.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // the example's data dirs are relative
	t.Setenv("HTTP_ADDR", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--config", example, "--data", filepath.Join(dir, "kafka"), "--rate", "5000"}, &out, &errOut)
	}()
	progress := regexp.MustCompile(`(\d+) transactions committed to topic orders-clean\n`)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := progress.FindAllStringSubmatch(out.String(), -1); len(m) > 0 {
			if n, _ := strconv.Atoi(m[len(m)-1][1]); n >= 2 {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("dev exited %d before committing:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no transactions committed within a minute:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("dev exited %d after the stop:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	final := regexp.MustCompile(`stopped after a final checkpoint: (\d+) records in, (\d+) out, \d+ checkpoints, (\d+) transactions committed to topic orders-clean\n$`)
	m := final.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no final summary:\n%s", out.String())
	}
	if in, _ := strconv.Atoi(m[1]); in == 0 {
		t.Errorf("no records read: %s", m[0])
	}
	if outN, _ := strconv.Atoi(m[2]); outN == 0 {
		t.Errorf("no records written: %s", m[0])
	}
}
