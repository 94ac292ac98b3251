package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// containerInfo is the part of `docker inspect` of a container this test
// reads.
type containerInfo struct {
	State struct {
		Status    string
		Running   bool
		Pid       int
		ExitCode  int
		OOMKilled bool
		Error     string
		Health    *struct {
			Status        string
			FailingStreak int
			Log           []struct {
				ExitCode int
				Output   string
			}
		}
	}
	Config struct {
		User        string
		Labels      map[string]string
		Healthcheck *struct{ Test []string }
	}
}

// TestContainer: the image as shipped (the Dockerfile's runtime stage,
// built on local material: docker_helpers_test.go) runs a job against the
// test broker with --network host, a fresh named volume at /data and the
// config mounted read-only at /etc/connector/config.yaml, with the image's
// own entrypoint, command and HEALTHCHECK (only its interval shortened).
// It requires: `connector version` prints the version given at build; the
// connector runs as 65532:65532 (docker top: the ps of the engine's host);
// /readyz answers on the host; the HEALTHCHECK reaches healthy; checkpoints
// complete on the volume, which the image's /data made writable for
// 65532; docker stop (SIGTERM) while ids are still produced takes a final
// checkpoint and exits 0; a second container on the volume restores that
// checkpoint and goes on; after its own docker stop the volume holds every
// produced id exactly once, its files owned by 65532; every log line is
// strict JSON.
func TestContainer(t *testing.T) {
	engine := requireDocker(t)
	b := cluster(t)
	id := strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.Itoa(os.Getpid())
	name := "connector-e2e-" + id // the image, the volume, and the containers' prefix
	version := "e2e-" + id
	bin := buildRuntimeImage(t, name, version)

	out := dockerCmd(t, time.Minute, "run", "--rm", "--network", "none", name, "version")
	if first, _, _ := strings.Cut(out, "\n"); first != "connector "+version {
		t.Errorf("docker run %s version: first line %q, want %q (all: %q)", name, first, "connector "+version, out)
	}

	topic := kafkatest.Topic(t, b, 4)
	job := "e2e-container-" + id
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	// Absolute paths under /data, the volume; the addresses from the
	// environment, as the shipped config.yaml does.
	config := fmt.Sprintf(`name: %s
kafka: {brokers: ["${KAFKA_BROKERS}"]}
source: {topics: [%s], group: %s, start_offset: earliest}
checkpoint: {interval: 300ms, dir: /data/checkpoints}
state: {dir: /data/state}
pipeline: {parallelism: 2}
sink: {type: file, path: /data/out, format: jsonl, roll_age: 1s}
http: {addr: "${HTTP_ADDR}"}
`, job, topic, job)
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	brokers := "KAFKA_BROKERS=" + strings.Join(b.Addrs, ",")
	if out, err := runCommand(bin, []string{brokers, "HTTP_ADDR=127.0.0.1:0"}, "validate", "--config", cfg); err != nil {
		t.Fatalf("connector validate --config %s: %v\n%s", cfg, err, out)
	}
	dockerRemove(t, "volume", name)
	dockerCmd(t, 30*time.Second, "volume", "create", name)
	t.Logf("Docker %s: job %s, topic %s (4 partitions), volume %s", engine, job, topic, name)

	const n0 = 6_000 // ids at least, over both containers
	prod := startProducer(t, b, topic, producerSpec{N: 10_000_000, Rate: 2_000})

	c := startContainer(t, name+"-1", name, name, cfg, brokers)
	info := c.inspect()
	if info.Config.User != "65532:65532" {
		t.Errorf("the container's user is %q, want 65532:65532 (the Dockerfile's USER)", info.Config.User)
	}
	if hc := info.Config.Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/connector", "healthcheck", "--config", "/etc/connector/config.yaml"}) {
		t.Errorf("the container's health check is %+v, want the image's CMD /connector healthcheck --config /etc/connector/config.yaml", hc)
	}
	if v := info.Config.Labels["org.opencontainers.image.version"]; v != version {
		t.Errorf("label org.opencontainers.image.version is %q, want %q", v, version)
	}
	c.requireUser(info.State.Pid)
	c.waitFor("health status healthy", 90*time.Second, func(info containerInfo) (bool, string) {
		h := info.State.Health
		if h == nil {
			return false, "no health state"
		}
		if h.Status == "unhealthy" {
			t.Fatalf("the container became unhealthy: %+v", h.Log)
		}
		return h.Status == "healthy", fmt.Sprintf("health %s, failing streak %d", h.Status, h.FailingStreak)
	})
	health := "?"
	if h := c.inspect().State.Health; h != nil && len(h.Log) > 0 {
		health = strings.TrimSpace(h.Log[len(h.Log)-1].Output)
	}
	t.Logf("HEALTHCHECK (connector healthcheck) healthy %v after docker run: %q", time.Since(c.started).Round(time.Millisecond), health)
	c.waitFor("records written and 2 checkpoints completed", 2*time.Minute, func(containerInfo) (bool, string) {
		recs, err1 := c.http.metric(metricRecordsOut)
		cps, err2 := c.http.metric(metricCheckpoints)
		return err1 == nil && err2 == nil && recs > 0 && cps >= 2,
			fmt.Sprintf("%s=%v (%v) %s=%v (%v)", metricRecordsOut, recs, err1, metricCheckpoints, cps, err2)
	})
	if !prod.running() {
		t.Fatalf("the producer finished before the SIGTERM: not mid-stream")
	}
	first := c.stop(version)
	if first.restoredFrom != nil {
		t.Errorf("the first container restored checkpoint %d: the volume was not fresh", *first.restoredFrom)
	}

	mid, _ := c.volume(t)
	requireAfterSIGTERM(t, mid, int(prod.sent.Load()), " on the volume")

	c = startContainer(t, name+"-2", name, name, cfg, brokers)
	n := prod.stopAfter(t, n0, 2*time.Minute)
	c.waitFor(fmt.Sprintf("all %d ids visible on the volume", n), 2*time.Minute, func(containerInfo) (bool, string) {
		o, err := c.volumeOutput()
		if err != nil { // a file grew while docker cp read it: next time
			return false, err.Error()
		}
		return o.present(n) == n, fmt.Sprintf("%d of %d ids visible", o.present(n), n)
	})
	second := c.stop(version)
	if second.restoredFrom == nil || *second.restoredFrom != first.final {
		t.Errorf("the second container restored checkpoint %v, want the first one's final checkpoint %d", second.restoredFrom, first.final)
	}

	o, headers := c.volume(t)
	requireOwnedByRuntimeUser(t, headers)
	tl := tallyOutput(o, n)
	t.Logf("exactly-once: records=%d sigterms=2 duplicates=%d missing=%d (%d lines in %d files on volume %s)", n, tl.duplicates, tl.missing, o.lines, o.files, name)
	if !tl.ok() {
		t.Errorf("the volume's output is not every id once: %s", tl)
	}
}

// runCommand runs bin with args and env added to the test's environment,
// for at most a minute, and returns its combined output.
func runCommand(bin string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(environWithout(envCrashAt), env...)
	return cmd.CombinedOutput()
}

// containerRun is a container of TestContainer; http reaches its HTTP
// server from the host (only proc.get and proc.metric use it).
type containerRun struct {
	t       *testing.T
	name    string
	http    *proc
	started time.Time
	out     *outputReader // of a copy of the volume's /data/out
	copyDir string
}

// startContainer runs image as container name, with --network host,
// volume at /data, cfg at /etc/connector/config.yaml and env, and the
// image's entrypoint, command and health check (at a 1 s interval), and
// waits until /readyz answers 200 on the host. The container is removed
// when the test ends; if the test failed, its last log lines are printed.
func startContainer(t *testing.T, name, image, volume, cfg string, env ...string) *containerRun {
	t.Helper()
	c := newContainerRun(t, name, freeAddr(t))
	dockerRemove(t, "container", name)
	t.Cleanup(func() {
		if t.Failed() {
			logs, err := runDocker(30*time.Second, nil, "logs", "--tail", "40", name)
			t.Logf("--- container %s, last log lines (%v):\n%s---", name, err, logs)
		}
	})
	args := []string{"run", "--detach", "--name", name, "--network", "host",
		"--volume", volume + ":/data",
		"--mount", "type=bind,source=" + cfg + ",target=/etc/connector/config.yaml,readonly",
		"--health-interval", "1s", "--env", "HTTP_ADDR=" + c.http.addr}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	c.started = time.Now()
	dockerCmd(t, time.Minute, append(args, image)...)
	c.waitFor("/readyz 200 on the host", 90*time.Second, func(containerInfo) (bool, string) {
		code, body, err := c.http.get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("HTTP %d %q %v", code, body, err)
	})
	t.Logf("container %s: /readyz 200 on %s from the host %v after docker run", name, c.http.addr, time.Since(c.started).Round(time.Millisecond))
	return c
}

// newContainerRun is the container name, whose HTTP server the host
// reaches at addr.
func newContainerRun(t *testing.T, name, addr string) *containerRun {
	c := &containerRun{t: t, name: name, http: &proc{addr: addr}, copyDir: t.TempDir()}
	c.out = newOutputReader(filepath.Join(c.copyDir, "out"))
	return c
}

// stop runs docker stop (SIGTERM; SIGKILL after 90 s): see stopBy.
func (c *containerRun) stop(version string) containerLog {
	c.t.Helper()
	return c.stopBy("docker stop (SIGTERM)", version, func() {
		dockerCmd(c.t, 2*time.Minute, "stop", "--time", "90", c.name)
	})
}

// stopBy stops the container with stop (how says what it does), requires
// exit code 0 and the final checkpoint in the log (checkLog), and returns
// what the log says.
func (c *containerRun) stopBy(how, version string, stop func()) containerLog {
	c.t.Helper()
	t0 := time.Now()
	stop()
	took := time.Since(t0).Round(time.Millisecond)
	info := c.inspect()
	if info.State.Running || info.State.ExitCode != 0 || info.State.OOMKilled {
		c.t.Fatalf("%s after %s: status %s, exit code %d, OOM-killed %v, error %q; want exit code 0",
			c.name, how, info.State.Status, info.State.ExitCode, info.State.OOMKilled, info.State.Error)
	}
	c.t.Logf("container %s: %s -> exit code 0 in %v", c.name, how, took)
	return c.checkLog(version)
}

// volumeOutput reads the output on the volume (a copy of /data/out).
func (c *containerRun) volumeOutput() (output, error) {
	if err := os.RemoveAll(filepath.Join(c.copyDir, "out")); err != nil {
		return output{}, err
	}
	if _, err := copyOut(c.name, "/data/out", c.copyDir); err != nil {
		return output{}, err
	}
	return c.out.readAll()
}

// volume copies all of /data out of the stopped container, and returns
// the output there and the copy's headers.
func (c *containerRun) volume(t *testing.T) (output, map[string]*tar.Header) {
	t.Helper()
	dir := t.TempDir()
	headers, err := copyOut(c.name, "/data", dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOutputReader(filepath.Join(dir, "data", "out")).readAll()
	if err != nil {
		t.Fatalf("read the output copied from the volume: %v", err)
	}
	return o, headers
}

func (c *containerRun) inspect() containerInfo {
	c.t.Helper()
	var info containerInfo
	dockerInspect(c.t, "container", c.name, &info)
	return info
}

// waitFor polls cond every 200 ms until it holds; it fails the test when
// the container stops running first or timeout passes, with what cond
// last said.
func (c *containerRun) waitFor(what string, timeout time.Duration, cond func(containerInfo) (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		info := c.inspect()
		if !info.State.Running {
			c.t.Fatalf("waiting for %s: the container is %s (exit code %d, %q)", what, info.State.Status, info.State.ExitCode, info.State.Error)
		}
		ok, state := cond(info)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s within %v: %s", what, timeout, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// requireUser requires every process of the container, asked of the
// engine's host (docker top runs its ps there), to run as 65532:65532,
// the connector among them at pid (the host's pid of the container's
// first process).
func (c *containerRun) requireUser(pid int) {
	c.t.Helper()
	out := dockerCmd(c.t, 30*time.Second, "top", c.name, "-eo", "pid,ruid,euid,suid,rgid,egid,args")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if head := strings.Fields(lines[0]); len(lines) < 2 || len(head) < 7 ||
		!slices.Equal(head[:6], []string{"PID", "RUID", "EUID", "SUID", "RGID", "EGID"}) {
		c.t.Fatalf("docker top %s: unexpected output %q", c.name, out)
	}
	found := false
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 7 {
			c.t.Fatalf("docker top %s: line %q", c.name, l)
		}
		for _, v := range f[1:6] {
			if v != strconv.Itoa(runtimeUID) {
				c.t.Errorf("docker top %s: process %q runs with ids %v, want all %d (non-root)", c.name, strings.Join(f[6:], " "), f[1:6], runtimeUID)
				break
			}
		}
		if f[0] == strconv.Itoa(pid) && f[6] == "/connector" {
			found = true
			c.t.Logf("docker top: pid %s %q, uid/euid/suid/gid/egid %v", f[0], strings.Join(f[6:], " "), f[1:6])
		}
	}
	if !found {
		c.t.Errorf("docker top %s: no /connector at the container's pid %d: %q", c.name, pid, out)
	}
}

// containerLog is what checkLog read in a container's log.
type containerLog struct {
	final        uint64  // the final checkpoint, completed
	restoredFrom *uint64 // the checkpoint the run restored, if any
}

// checkLog reads the container's log (its stderr: zerolog JSON lines; its
// stdout must be empty) and requires every line strict, the start line
// with version, and the stop: a final checkpoint requested, that
// checkpoint (or a later one) completed, and the job stopped after it.
func (c *containerRun) checkLog(version string) containerLog {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "logs", c.name)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("docker logs %s: %v", c.name, err)
	}
	if stdout.Len() > 0 {
		c.t.Errorf("%s wrote to stdout: %.300q", c.name, stdout.String())
	}
	var cl containerLog
	var requested uint64
	var requestedSeen, completed, stoppedAfter bool
	for i, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
		if err := strictLogLine(line); err != nil {
			c.t.Errorf("%s log line %d: %v: %s", c.name, i+1, err, line)
			continue
		}
		var l struct {
			Message    string `json:"message"`
			Version    string `json:"version"`
			Checkpoint uint64 `json:"checkpoint"`
		}
		_ = json.Unmarshal([]byte(line), &l) // strict already
		show := true
		switch l.Message {
		case "connector starting":
			if l.Version != version {
				c.t.Errorf("%s: connector starting: version %q, want %q", c.name, l.Version, version)
			}
		case "restoring from checkpoint":
			cl.restoredFrom = &l.Checkpoint
		case "stop requested: taking a final checkpoint":
			requested, requestedSeen = l.Checkpoint, true
		case "checkpoint completed":
			show = requestedSeen && l.Checkpoint >= requested && !completed
			if show {
				completed, cl.final = true, l.Checkpoint
			}
		case "job stopped after its final checkpoint":
			stoppedAfter = true
		default:
			show = false
		}
		if show {
			c.t.Logf("%s log: %s", c.name, line)
		}
	}
	if !requestedSeen || !completed || !stoppedAfter {
		c.t.Errorf("%s's log does not show the final checkpoint: requested %v (checkpoint %d), completed %v, stopped after it %v",
			c.name, requestedSeen, requested, completed, stoppedAfter)
	}
	return cl
}

// requireOwnedByRuntimeUser requires /data (the fresh volume: docker
// copied the image's /data into it, owner included), and all the
// checkpoints, state and output the connector wrote there, owned by
// 65532:65532, and some of each.
func requireOwnedByRuntimeUser(t *testing.T, headers map[string]*tar.Header) {
	t.Helper()
	count := map[string]int{}
	for name, h := range headers {
		if h.Uid != runtimeUID || h.Gid != runtimeUID {
			t.Errorf("volume: %s is owned by %d:%d, want %d:%d", name, h.Uid, h.Gid, runtimeUID, runtimeUID)
		}
		if top, rest, ok := strings.Cut(strings.TrimPrefix(name, "data/"), "/"); ok && rest != "" && h.Typeflag == tar.TypeReg {
			count[top]++
		}
	}
	if headers["data"] == nil {
		t.Fatalf("docker cp of /data holds no data directory")
	}
	for _, d := range []string{"checkpoints", "state", "out"} {
		if count[d] == 0 {
			t.Errorf("volume: no file under /data/%s", d)
		}
	}
	t.Logf("volume: /data owned by %d:%d, mode %o; files: %v", headers["data"].Uid, headers["data"].Gid, headers["data"].Mode&0o7777, count)
}
