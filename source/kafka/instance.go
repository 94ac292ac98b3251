package kafka

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/source"
)

// Until several instances of one job are supported, a second process of the
// same job with its own directories would read every partition too and
// write a full copy of the output. The source notices it through the group:
// every commit carries this process's instance in the offsets' metadata,
// and before each commit (after its first) it reads the group's offsets
// back. Another instance's metadata on a partition this process committed
// means another process committed it after this one did: it is alive. The
// instance that started later stops (source.ErrPermanent, naming the
// other); the earlier one says so at error level at every commit and goes
// on. The group's other partitions say nothing: their metadata may be a
// dead predecessor's (a topic the job no longer reads, a partition that an
// older checkpoint restored lacks), and taking it for a live instance's
// stopped every later run of the job for good.
type committer struct {
	instance string
	started  time.Time

	mu     sync.Mutex
	mine   map[partitionID]bool // the partitions of this process's commits; nil before its first
	warned string               // the last other instance reported
}

const instancePrefix = "connector-instance "

// instanceID names this process: host, pid and start time.
func instanceID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%shost=%s pid=%d start=%d", instancePrefix, host, os.Getpid(), time.Now().UnixNano())
}

// seen takes the group's offsets as found at Open. They say nothing yet:
// the last committer may be this job's previous process, now dead.
func (c *committer) seen(kadm.OffsetResponses) {}

// startOf reads the start time out of an instance's metadata.
func startOf(meta string) (time.Time, bool) {
	_, after, ok := strings.Cut(meta, " start=")
	if !strings.HasPrefix(meta, instancePrefix) || !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(after, 10, 64)
	return time.Unix(0, n), err == nil
}

// check reads the group's offsets before a commit and reports another live
// instance: nil (none, or it started later: a warning is logged), or a
// permanent error when this one is the later.
func (s *Source) checkOtherInstance(ctx context.Context) error {
	c := &s.commits
	c.mu.Lock()
	committed := c.mine != nil
	c.mu.Unlock()
	if !committed {
		return nil
	}
	cur, err := s.adm.FetchOffsets(ctx, s.cfg.Group)
	if err != nil {
		return nil // the commit itself will say what is wrong
	}
	var other string
	c.mu.Lock() // mine grows with each commit
	cur.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Metadata != c.instance && other == "" && o.At >= 0 && c.mine[partitionID{o.Topic, o.Partition}] {
			other = o.Metadata
		}
	})
	c.mu.Unlock()
	if other == "" {
		return nil
	}
	ourStart, _ := startOf(c.instance)
	theirStart, isInstance := startOf(other)
	msg := fmt.Sprintf("another process commits to group %s (%q); this process is %q: each reads every partition, so the output is written twice",
		s.cfg.Group, other, c.instance)
	if isInstance && theirStart.Before(ourStart) {
		return fmt.Errorf("%w: %s; stop one of them (several instances of one job are not supported yet)", source.ErrPermanent, msg)
	}
	c.mu.Lock()
	first := c.warned != other
	c.warned = other
	c.mu.Unlock()
	ev := s.log.Error()
	if !first {
		ev = s.log.Warn()
	}
	ev.Str("other_instance", other).Msg(msg)
	return nil
}
