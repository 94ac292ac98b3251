package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	// composeOverride is the test's override of docker-compose.yml (its
	// images only), relative to the repository root, where docker-compose
	// runs.
	composeOverride = "e2e/testdata/compose-local.yml"
	// composeHTTPPort is the host port docker-compose.yml publishes the
	// connector's HTTP server on by default ("${CONNECTOR_HTTP_PORT:-8080}:8080").
	composeHTTPPort = 8080
	// envComposeHTTPPort names the host port otherwise; the test sets it to
	// a free port, so that whatever holds 8080 on the host (another run of
	// the suite, a developer's connector) cannot fail it.
	envComposeHTTPPort = "CONNECTOR_HTTP_PORT"
	// metricCommittedFiles counts the files the file sink made visible.
	metricCommittedFiles = "connector_sink_committed_files_total"
	metricLag            = "connector_consumer_lag_records"
	metricRecordsIn      = "connector_records_in_total"
)

// TestCompose runs the repository's docker-compose.yml with docker-compose,
// as `docker compose up` would: Kafka, the sample producer (connector
// produce: creates the orders topic, 100 orders a second) and the
// connector on config.yaml. Only the images are the test's
// (testdata/compose-local.yml says which and why; the test checks that
// the merged configuration differs from the file's in the images alone):
// these machines reach no registry. The file publishes the connector on
// host port 8080 unless CONNECTOR_HTTP_PORT names another; the test checks
// the default and runs on a free port. It requires: `up -d --no-build` runs
// the three services on the test's images; /readyz answers 200 on
// localhost at the published port; a committed (visible) file of
// orders appears on the connector-data volume, each order once and shaped
// by config.yaml's transforms; once the producer is stopped and the
// connector has read everything, `docker-compose stop connector` (SIGTERM,
// the file's stop_grace_period) takes a final checkpoint and exits 0, and
// the volume then holds every order the connector read exactly once. It
// logs `docker-compose ps` and a few log lines of each service, and
// removes everything (down -v, the images) at the end.
func TestCompose(t *testing.T) {
	engine := requireDocker(t)
	composeVersion := requireCompose(t)
	hostPort := freeHostPort(t)
	t0 := time.Now()
	id := strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.Itoa(os.Getpid())
	p := &composeProject{t: t, name: "connector-compose-" + id} // the project and the connector image
	kafkaImage := p.name + "-kafka"
	version := "e2e-" + id
	buildRuntimeImage(t, p.name, version)
	kafkaVersion := buildKafkaImage(t, kafkaImage)
	file := readComposeFile(t)
	if want := "apache/kafka:" + kafkaVersion; file.Services["kafka"].Image != want {
		t.Errorf("docker-compose.yml runs %s, but scripts/kafka (the tests, and this test's Kafka image) runs %s",
			file.Services["kafka"].Image, want)
	}
	p.env = []string{"CONNECTOR_COMPOSE_IMAGE=" + p.name, "CONNECTOR_COMPOSE_KAFKA_IMAGE=" + kafkaImage, envComposeHTTPPort + "="}
	p.requirePublished("connector", composeHTTPPort) // the default, the README's localhost:8080
	p.env[len(p.env)-1] = envComposeHTTPPort + "=" + strconv.Itoa(hostPort)
	p.requirePublished("connector", hostPort)
	images := map[string]string{"kafka": kafkaImage, "producer": p.name, "connector": p.name, "connector-group": p.name}
	p.requireOnlyImagesReplaced(images)
	t.Logf("Docker %s, docker-compose %s: project %s, images built in %v", engine, composeVersion, p.name, time.Since(t0).Round(time.Millisecond))

	t.Cleanup(p.down)
	t1 := time.Now()
	_, progress := p.run(4*time.Minute, "up", "-d", "--no-build")
	t.Logf("docker-compose up -d --no-build (waits for kafka healthy) in %v:\n%s", time.Since(t1).Round(time.Millisecond), progress)
	ctrs := map[string]string{}
	for svc, image := range images {
		if svc == "connector-group" {
			continue // profile group: `up` without --profile leaves it out
		}
		ctrs[svc] = p.requireContainerOf(svc, image)
	}

	c := newContainerRun(t, ctrs["connector"], net.JoinHostPort("localhost", strconv.Itoa(hostPort)))
	c.waitFor(fmt.Sprintf("/readyz 200 on localhost:%d", hostPort), 90*time.Second, func(containerInfo) (bool, string) {
		code, body, err := c.http.get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("HTTP %d %q %v", code, body, err)
	})
	t.Logf("/readyz 200 on localhost:%d %v after up", hostPort, time.Since(t1).Round(time.Millisecond))

	// A file becomes visible when it rolls: at config.yaml's roll_age (1m).
	c.waitFor("a committed file on the connector-data volume", 2*time.Minute, func(containerInfo) (bool, string) {
		files, err1 := c.http.metric(metricCommittedFiles)
		recs, err2 := c.http.metric(metricRecordsOut)
		return err1 == nil && files > 0, fmt.Sprintf("%s=%v (%v) %s=%v (%v); files roll at roll_age 1m",
			metricCommittedFiles, files, err1, metricRecordsOut, recs, err2)
	})
	first, err := c.volumeOutput()
	if err != nil {
		t.Fatalf("read the committed output on the volume: %v", err)
	}
	shaped := requireOrderShape(t, filepath.Join(c.copyDir, "out"))
	t.Logf("committed output %v after up: %d files, %d orders (%d lines shaped by config.yaml's project step)",
		time.Since(t1).Round(time.Millisecond), first.files, first.lines, shaped)
	if first.lines == 0 {
		t.Fatalf("the committed files on the volume hold no orders")
	}
	if bad := requireOrdersOnce(first, -1); bad != "" {
		t.Errorf("committed output while running: %s", bad)
	}
	ps, _ := p.run(time.Minute, "ps")
	t.Logf("docker-compose ps (running):\n%s", ps)

	// Stop the producer, let the connector read all it wrote, then stop the
	// connector: the volume must then hold each order in the topic once.
	p.run(time.Minute, "stop", "producer")
	if info := p.inspect(ctrs["producer"]); info.State.Running || info.State.ExitCode != 0 {
		t.Errorf("the producer after docker-compose stop: %s, exit code %d; want exit code 0", info.State.Status, info.State.ExitCode)
	}
	producerLog := p.logs("producer")
	m := regexp.MustCompile(`produced (\d+) sample orders to orders`).FindStringSubmatch(producerLog)
	if m == nil {
		t.Fatalf("the producer's log does not say how many orders it produced:\n%s", producerLog)
	}
	produced, _ := strconv.Atoi(m[1])
	var read float64
	c.waitFor("every order in the topic read (lag 0, records in = out)", time.Minute, func(containerInfo) (bool, string) {
		lag, err1 := c.http.metric(metricLag)
		in, err2 := c.http.metric(metricRecordsIn)
		out, err3 := c.http.metric(metricRecordsOut)
		read = in
		return err1 == nil && err2 == nil && err3 == nil && lag == 0 && in > 0 && in == out,
			fmt.Sprintf("%s=%v (%v) %s=%v (%v) %s=%v (%v)", metricLag, lag, err1, metricRecordsIn, in, err2, metricRecordsOut, out, err3)
	})
	final := c.stopBy("docker-compose stop connector (SIGTERM, stop_grace_period 90s)", version, func() {
		p.run(2*time.Minute, "stop", "connector")
	})
	o, headers := c.volume(t)
	var top []string // config.yaml's relative dirs under the image's WORKDIR /data
	for name, h := range headers {
		if dir, ok := strings.CutPrefix(name, "data/"); ok && !strings.Contains(dir, "/") && h.Typeflag == tar.TypeDir {
			top = append(top, dir)
		}
	}
	slices.Sort(top)
	t.Logf("volume %s_connector-data: /data holds %v; final checkpoint %d", p.name, top, final.final)
	if bad := requireOrdersOnce(o, produced); bad != "" {
		t.Errorf("the volume after the stop: %s", bad)
	}
	if o.lines != int(read) {
		t.Errorf("the volume holds %d orders, the connector read %d from the topic", o.lines, int(read))
	}
	// The producer counts what the broker acknowledged, waiting at its
	// stop for the orders in flight: the topic holds exactly that many.
	if int(read) != produced {
		t.Errorf("the connector read %d orders from the topic, the producer says it produced %d", int(read), produced)
	}
	t.Logf("exactly-once: orders 1..%d each once on the volume (%d lines in %d files)", produced, o.lines, o.files)

	ps, _ = p.run(time.Minute, "ps")
	t.Logf("docker-compose ps (producer and connector stopped):\n%s", ps)
	kafkaLog := p.logs("kafka")
	requireKafkaConfig(t, file.Services["kafka"].Environment, kafkaLog)
	t.Logf("log lines:\n%s%s%s",
		serviceLines("kafka", kafkaLog, "Kafka Server started"),
		serviceLines("producer", producerLog, "sample orders"),
		serviceLines("connector", p.logs("connector"), `"connector starting"`, `"job stopped after its final checkpoint"`))
	t.Logf("compose test: %v in all (images %v, up to the final stop %v)", time.Since(t0).Round(time.Millisecond),
		t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
}

// requireCompose returns docker-compose's version. When it is missing,
// the test fails if Docker is expected (dockerExpected) and is skipped,
// saying so, if not: as requireDocker.
func requireCompose(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker-compose", "version", "--short").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	msg := fmt.Sprintf("no docker-compose (docker-compose version: %v)", err)
	if why := dockerExpected(); why != "" {
		t.Fatalf("%s, and %s requires it: run scripts/docker start, which installs Debian's docker-compose (scripts/test does)", msg, why)
	}
	t.Skipf("%s: skipped, as %s=0 asks (scripts/docker start installs it)", msg, envDocker)
	return ""
}

// freeHostPort returns a port free on the host's every address, for the
// compose file to publish the connector on.
func freeHostPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("find a free host port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// composeFile is what the test reads of docker-compose.yml.
type composeFile struct {
	Services map[string]struct {
		Image       string
		Environment map[string]string
	}
}

func readComposeFile(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// composeProject is one docker-compose project of the repository's
// docker-compose.yml and the test's override; env adds the override's
// variables.
type composeProject struct {
	t    *testing.T
	name string
	env  []string
}

// composeFiles are the files of the test's project: the repository's
// docker-compose.yml, and the test's override on top.
var composeFiles = []string{"docker-compose.yml", composeOverride}

// compose runs docker-compose in the repository root with files (-f),
// and returns its standard output and standard error (where v1 reports
// progress); the error carries the latter.
func (p *composeProject) compose(timeout time.Duration, files []string, args ...string) (string, string, error) {
	full := []string{"--ansi", "never", "-p", p.name}
	for _, f := range files {
		full = append(full, "-f", f)
	}
	return runCLI(timeout, "..", p.env, nil, "docker-compose", append(full, args...)...)
}

// run is compose with composeFiles that fails the test on an error.
func (p *composeProject) run(timeout time.Duration, args ...string) (stdout, stderr string) {
	p.t.Helper()
	stdout, stderr, err := p.compose(timeout, composeFiles, args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return stdout, stderr
}

// requirePublished requires docker-compose.yml, under p.env, to publish
// service's port 8080 (its HTTP server) on host port want.
func (p *composeProject) requirePublished(service string, want int) {
	p.t.Helper()
	out, _, err := p.compose(time.Minute, composeFiles[:1], "config")
	if err != nil {
		p.t.Fatal(err)
	}
	var cfg struct {
		Services map[string]struct {
			Ports []struct{ Target, Published int }
		}
	}
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		p.t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	ports := cfg.Services[service].Ports
	if len(ports) != 1 || ports[0].Target != 8080 || ports[0].Published != want {
		p.t.Fatalf("docker-compose config with %v: service %s publishes %+v, want 8080 on host port %d",
			p.env, service, ports, want)
	}
}

// requireOnlyImagesReplaced requires the configuration docker-compose
// makes of the file and the override to be the file's own but for the
// services' images, which must be images.
func (p *composeProject) requireOnlyImagesReplaced(images map[string]string) {
	p.t.Helper()
	config := func(files ...string) map[string]any {
		out, _, err := p.compose(time.Minute, files, "config")
		if err != nil {
			p.t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(out), &m); err != nil {
			p.t.Fatalf("docker-compose config: %v\n%s", err, out)
		}
		return m
	}
	file, merged := config(composeFiles[0]), config(composeFiles...)
	// Less the images, and the lists docker-compose merges by key (which
	// changes their order) sorted.
	strip := func(m map[string]any) {
		services, _ := m["services"].(map[string]any)
		for _, s := range services {
			svc, _ := s.(map[string]any)
			delete(svc, "image")
			for _, key := range []string{"volumes", "ports"} {
				if l, ok := svc[key].([]any); ok {
					slices.SortFunc(l, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
				}
			}
		}
	}
	services, _ := merged["services"].(map[string]any)
	for name, s := range services {
		if svc, _ := s.(map[string]any); svc["image"] != images[name] {
			p.t.Errorf("docker-compose config: service %s has image %v, want %s", name, svc["image"], images[name])
		}
	}
	strip(file)
	strip(merged)
	if !reflect.DeepEqual(file, merged) {
		p.t.Fatalf("%s changes more of docker-compose.yml than the images:\nthe file's: %v\nmerged:     %v", composeOverride, file, merged)
	}
}

// composeContainer is what the test reads of `docker inspect` of a
// service's container.
type composeContainer struct {
	Name   string
	Image  string // the image's id
	Config struct{ Image string }
	State  struct {
		Status   string
		Running  bool
		ExitCode int
	}
}

func (p *composeProject) inspect(ctr string) composeContainer {
	p.t.Helper()
	var c composeContainer
	dockerInspect(p.t, "container", ctr, &c)
	return c
}

// requireContainerOf returns the name of service's container, which must
// run image (by id: the one the test built, neither pulled nor built by
// docker-compose).
func (p *composeProject) requireContainerOf(service, image string) string {
	p.t.Helper()
	id, _ := p.run(time.Minute, "ps", "-q", service)
	id = strings.TrimSpace(id)
	if id == "" || strings.Contains(id, "\n") {
		p.t.Fatalf("docker-compose ps -q %s: %q, want one container", service, id)
	}
	c := p.inspect(id)
	var img struct{ ID string }
	dockerInspect(p.t, "image", image, &img)
	if c.Config.Image != image || c.Image != img.ID {
		p.t.Errorf("service %s runs image %s (%s), want the test's %s (%s)", service, c.Config.Image, c.Image, image, img.ID)
	}
	return strings.TrimPrefix(c.Name, "/")
}

// logs returns the log of service's container (stdout and stderr).
func (p *composeProject) logs(service string) string {
	p.t.Helper()
	log, _ := p.run(time.Minute, "logs", "--no-color", "--no-log-prefix", service)
	return log
}

// down removes the project: containers, network, volumes (-v), and the
// images docker-compose built (--rmi local: none; the test's own are
// removed by their cleanups). If the test failed, the services' last log
// lines are printed first.
func (p *composeProject) down() {
	if p.t.Failed() {
		out, _, err := p.compose(time.Minute, composeFiles, "logs", "--no-color", "--tail", "40")
		p.t.Logf("--- docker-compose logs --tail 40 (%v):\n%s---", err, out)
	}
	t0 := time.Now()
	_, progress, err := p.compose(3*time.Minute, composeFiles, "down", "-v", "--rmi", "local", "--timeout", "30")
	if err != nil {
		p.t.Errorf("cleanup: %v", err)
		return
	}
	p.t.Logf("docker-compose down -v --rmi local in %v:\n%s", time.Since(t0).Round(time.Millisecond), progress)
}

// requireOrdersOnce checks an output of the sample producer's orders (ids
// 1, 2, ...): every line an order, no id twice, and, when produced >= 0,
// every id at most produced. It returns what is wrong, "" if nothing.
func requireOrdersOnce(o output, produced int) string {
	var dup, outside []int64
	for id, n := range o.counts {
		if n > 1 {
			dup = append(dup, id)
		}
		if id < 1 || produced >= 0 && id > int64(produced) {
			outside = append(outside, id)
		}
	}
	if len(dup)+len(outside)+len(o.bad) == 0 {
		return ""
	}
	slices.Sort(dup)
	slices.Sort(outside)
	return fmt.Sprintf("%d ids more than once (e.g. %v), %d ids not produced (e.g. %v), %d bad lines %q",
		len(dup), dup[:min(len(dup), 10)], len(outside), outside[:min(len(outside), 10)], len(o.bad), o.bad[:min(len(o.bad), 5)])
}

// requireOrderShape requires every line of the visible files under dir to
// be an order as config.yaml's project step makes it (customer renamed to
// customer_id, note dropped), and returns how many lines it read.
func requireOrderShape(t *testing.T, dir string) int {
	t.Helper()
	want := []string{"amount", "created_at", "customer_id", "id", "status"}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || hidden(d.Name()) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
			var rec map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				return fmt.Errorf("%s: %v: %.200q", d.Name(), err, line)
			}
			keys := make([]string, 0, len(rec))
			for k := range rec {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, want) {
				return fmt.Errorf("%s: an order with fields %v, want %v (config.yaml's project step): %.200q", d.Name(), keys, want, line)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("committed output: %v", err)
	}
	return n
}

// requireKafkaConfig requires the kafka service's log to show the
// server.properties its image's command wrote (testdata/kafka-image/run
// prints it) to hold every KAFKA_* setting of docker-compose.yml, by
// apache/kafka's rule.
func requireKafkaConfig(t *testing.T, env map[string]string, log string) {
	t.Helper()
	name := strings.NewReplacer("___", "-", "__", "_", "_", ".")
	var props []string
	for k, v := range env {
		if !strings.HasPrefix(k, "KAFKA_") {
			continue
		}
		prop := name.Replace(strings.ToLower(strings.TrimPrefix(k, "KAFKA_"))) + "=" + v
		props = append(props, prop)
		if !strings.Contains(log, "     "+prop+"\n") {
			t.Errorf("kafka's server.properties has no %s (from %s in docker-compose.yml)", prop, k)
		}
	}
	slices.Sort(props)
	t.Logf("kafka: server.properties from docker-compose.yml's environment: %s", strings.Join(props, " "))
}

// serviceLines returns the lines of a service's log that hold any of subs,
// indented under the service's name.
func serviceLines(service, log string, subs ...string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(log, "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				fmt.Fprintf(&b, "  %s\n", line)
				break
			}
		}
	}
	return service + ":\n" + b.String()
}
