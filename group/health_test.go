package group

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestRefusedCredentialsInGroupModeAreABadConfig: a refused credential is
// a bad config (README: "exits 2 at once, naming the key"), in group mode
// as in single mode. The member's first step, setting up the slot topic,
// took it for an unreachable broker and retried it forever.
func TestRefusedCredentialsInGroupModeAreABadConfig(t *testing.T) {
	// A SASL_PLAINTEXT listener of real Kafka: scripts/kafka start --security
	// (user connector / connector-secret).
	addr := os.Getenv("KAFKA_SASL_PLAINTEXT_BROKERS")
	if addr == "" {
		t.Fatal("this test needs the broker's SASL_PLAINTEXT listener: KAFKA_SASL_PLAINTEXT_BROKERS is not set; scripts/test starts the broker with it (scripts/kafka start --security)")
	}
	dir := t.TempDir()
	y := fmt.Sprintf(`
name: g-review-sasl-%d
kafka: {brokers: [%q], sasl: {mechanism: PLAIN, username: connector, password: not-the-password, allow_cleartext: true}}
source: {topics: ["in"]}
checkpoint: {interval: 100ms, timeout: 10s, dir: %q}
state: {dir: %q}
sink: {type: file, path: %q}
http: {addr: "127.0.0.1:0"}
instances: {mode: group, slots: 2, session_timeout: 6s}
`, time.Now().UnixNano(), addr, filepath.Join(dir, "chk"), filepath.Join(dir, "state"), filepath.Join(dir, "out"))
	cfg, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	m := New(cfg, Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = m.Run(ctx)
	if !errors.Is(err, kafkaclient.ErrMisconfigured) {
		t.Fatalf("Run with a refused password = %v after %v, want an error classed kafkaclient.ErrMisconfigured (exit 2); ready meanwhile: %v",
			err, 20*time.Second, m.Ready())
	}
}

// TestAMemberIsNotReadyWhileItsBrokersAreGone: DESIGN: "unreachable
// broker: ... stay healthy-but-not-ready". A member whose brokers went
// away loses its group session (onLost stops every slot), but franz-go
// keeps the last generation, and Ready said "ready and idle" while the
// process was in no group and ran nothing.
func TestAMemberIsNotReadyWhileItsBrokersAreGone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	b := kafkatest.Brokers{Addrs: c.ListenAddrs()}
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := groupConfig(t, b, topic, dir, 2)
	a := startMember(t, cfg, "a")
	waitSlots(t, []*member{a}, disjointCover(2))
	waitFor(t, "ready", func() (bool, string) { err := a.m.Ready(); return err == nil, fmt.Sprint(err) })

	c.Close()
	closed = true
	waitFor(t, "the slots stopped after the group session was lost", func() (bool, string) {
		in := a.m.Info()
		return len(in.Owned) == 0, fmt.Sprintf("%+v", in.Owned)
	})
	if err := a.m.Ready(); err == nil {
		a.m.mu.Lock()
		cl := a.m.client
		a.m.mu.Unlock()
		_, gen := cl.GroupMetadata()
		t.Fatalf("Ready() = nil (state %q, generation %d) with the brokers gone, no group session and no slot running; want not ready",
			a.m.Info().State, gen)
	} else if !strings.Contains(err.Error(), "group") {
		t.Logf("not ready: %v", err)
	}
}
