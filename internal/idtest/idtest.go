// Package idtest is what in-process tests of whole jobs share: produce
// records numbered by id, read the ids a file sink made visible, and check
// that every id arrived exactly once. The e2e package has its own, for
// processes.
package idtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// Produce writes ids from to to-1 into topic, each record keyed by its id
// (so every copy of an id lands in one partition), valued
// {"id":i,"amount":i%100}.
func Produce(t testing.TB, b kafkatest.Brokers, topic string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, `{"id":%d,"amount":%d}`, i, i%100)})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// Visible counts every id in the committed (visible) files of a file
// sink's directory: names starting with '.' or '_' are not output.
func Visible(t testing.TB, dir string) map[int]int {
	t.Helper()
	ids := map[int]int{}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var v struct{ ID int }
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: bad line %q: %v", e.Name(), sc.Text(), err)
			}
			ids[v.ID]++
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		f.Close()
	}
	return ids
}

// CheckOnce reports every id of 0 to n-1 not seen exactly once, and ids
// beyond them.
func CheckOnce(t testing.TB, ids map[int]int, n int) {
	t.Helper()
	for i := range n {
		if ids[i] != 1 {
			t.Errorf("id %d appears %d times", i, ids[i])
		}
	}
	if len(ids) != n {
		t.Errorf("%d distinct ids, want %d", len(ids), n)
	}
}
