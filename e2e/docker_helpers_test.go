package e2e

// Docker for the container test (container_test.go): whether an engine is
// required, the docker CLI, and the image of the Dockerfile's runtime stage
// built from local material, so that no registry is needed.
//
// The image: the Dockerfile is split into its stages. Its runtime stage
// (the last) is built as written, with the global ARGs before the first
// FROM, on a base made here (--build-arg RUNTIME_BASE) with the layout of
// distroless static:nonroot. Only the build stage is replaced: by an image
// holding the binary that the build stage's own `go build` line made on
// this machine, and /data owned by 65532 as the build stage makes it. The
// classic builder (DOCKER_BUILDKIT=0: what Debian's docker.io runs, and
// any docker CLI can ask for) builds every stage before the target, so
// the build stage's golang image cannot merely be left unused; BuildKit
// would need buildx or the engine's own client.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envDocker is what scripts/test exports (from scripts/docker start) once
// a Docker engine answers: CONNECTOR_DOCKER=1 makes one required.
const envDocker = "CONNECTOR_DOCKER"

// runtimeUID is the user the image runs as: distroless's nonroot.
const runtimeUID = 65532

// dockerExpected says what requires a Docker engine, "" when nothing
// does. It is required, as Kafka is for the other tests, unless
// CONNECTOR_DOCKER=0 opts out (scripts/test's documented opt-out), which
// CI overrides: a CI run never skips the container tests quietly.
func dockerExpected() string {
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		return "CI=" + ci
	}
	if os.Getenv(envDocker) == "0" {
		return ""
	}
	return "the container tests (set " + envDocker + "=0 to run without them, outside CI)"
}

// requireDocker returns the version of the engine the docker CLI reaches.
// When none answers, the test fails, unless CONNECTOR_DOCKER=0 opted out
// (dockerExpected): then it is skipped, saying so.
func requireDocker(t *testing.T) string {
	t.Helper()
	v, err := runDocker(20*time.Second, nil, "version", "--format", "{{.Server.Version}}")
	if err == nil && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	msg := fmt.Sprintf("no Docker engine answers (docker version: %v)", err)
	if why := dockerExpected(); why != "" {
		t.Fatalf("%s, and %s requires one: run scripts/docker start (scripts/test does)", msg, why)
	}
	t.Skipf("%s: skipped, as %s=0 asks (scripts/docker start provides an engine)", msg, envDocker)
	return ""
}

// runDocker runs the docker CLI with args (stdin, if not nil, on its
// standard input) and returns its standard output; the error carries its
// standard error. The classic builder is asked for: see the top of this
// file.
func runDocker(timeout time.Duration, stdin io.Reader, args ...string) (string, error) {
	stdout, _, err := runCLI(timeout, "", []string{"DOCKER_BUILDKIT=0"}, stdin, "docker", args...)
	return stdout, err
}

// runCLI runs the command name with args in dir ("": here), env added to
// the test's environment and stdin (if not nil) on its standard input,
// for at most timeout, and returns its standard output and error; the
// error carries the latter.
func runCLI(timeout time.Duration, dir string, env []string, stdin io.Reader, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("not done within %v", timeout)
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), err
}

// dockerCmd is runDocker that fails the test on an error.
func dockerCmd(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := runDocker(timeout, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dockerRemove removes a docker object (kind: container, volume or image)
// when the test ends.
func dockerRemove(t testing.TB, kind, name string) {
	args := map[string][]string{
		"container": {"rm", "--force", "--volumes"},
		"volume":    {"volume", "rm", "--force"},
		"image":     {"image", "rm", "--force"},
	}[kind]
	t.Cleanup(func() {
		if _, err := runDocker(time.Minute, nil, append(args, name)...); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// dockerInspect decodes `docker inspect` of one object into v.
func dockerInspect(t testing.TB, kind, name string, v any) {
	t.Helper()
	out := dockerCmd(t, 30*time.Second, "inspect", "--type", kind, name)
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		t.Fatalf("docker inspect %s: %d objects, %v: %.300s", name, len(list), err, out)
	}
	if err := json.Unmarshal(list[0], v); err != nil {
		t.Fatalf("docker inspect %s: %v", name, err)
	}
}

// ---------------------------------------------------------------------------
// The image

// dockerfileStages splits a Dockerfile into what comes before the first
// FROM (global ARGs, comments) and its stages, each from its FROM line on.
func dockerfileStages(text string) (header string, stages []string) {
	cont := false // the previous line ended with a backslash
	for line := range strings.SplitAfterSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fields := strings.Fields(trimmed); !cont && len(fields) > 0 && strings.EqualFold(fields[0], "FROM") {
			stages = append(stages, "")
		}
		if !strings.HasPrefix(trimmed, "#") {
			cont = strings.HasSuffix(trimmed, `\`)
		}
		if len(stages) == 0 {
			header += line
		} else {
			stages[len(stages)-1] += line
		}
	}
	return header, stages
}

var (
	buildStageFrom   = regexp.MustCompile(`(?i)^FROM\s+\S+\s+AS\s+build\s*$`)
	runtimeStageFrom = "FROM ${RUNTIME_BASE}"
	// The build stage's go build, run here as written but for its output.
	goBuildLine = regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=[01] go build .+) -o /connector (\./cmd/connector)$`)
)

// buildRuntimeImage builds the image name (see the top of this file) with
// --build-arg VERSION=version, and returns the path of the binary in it,
// built on this machine. The images are removed when the test ends.
func buildRuntimeImage(t *testing.T, name, version string) string {
	t.Helper()
	t0 := time.Now()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	header, stages := dockerfileStages(string(data))
	first := func(stage string) string { return strings.TrimSpace(strings.SplitN(stage, "\n", 2)[0]) }
	if len(stages) != 2 || !buildStageFrom.MatchString(first(stages[0])) || first(stages[1]) != runtimeStageFrom ||
		!strings.Contains(header, "ARG RUNTIME_BASE=") {
		t.Fatalf("the Dockerfile is no longer a build stage named build and a runtime stage %q on ARG RUNTIME_BASE: "+
			"update buildRuntimeImage (e2e/docker_helpers_test.go) with it", runtimeStageFrom)
	}
	m := goBuildLine.FindStringSubmatch(stages[0])
	if m == nil {
		t.Fatalf("the Dockerfile's build stage has no line matching %s: update buildRuntimeImage with it", goBuildLine)
	}

	dir := t.TempDir()
	binPath := filepath.Join(dir, "connector")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "sh", "-c", m[1]+` -o "$CONNECTOR_BIN" `+m[2])
	build.Dir = ".." // the module root, as the build stage's /src
	build.Env = append(environWithout("GOFLAGS"), "VERSION="+version, "CONNECTOR_BIN="+binPath)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build line (%s): %v\n%s", m[1], err, out)
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}

	base, buildImg := name+"-base", name+"-build"
	importImage(t, filepath.Join(dir, "base.tar"), base, distrolessLayout(t), []string{
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		// No USER: the base runs as root, so only the Dockerfile's USER
		// can make the connector run as 65532.
		"WORKDIR /home/nonroot",
	})
	importImage(t, filepath.Join(dir, "build.tar"), buildImg, []tarEntry{
		{name: "connector", mode: 0o755, data: bin},
		{name: "data/", mode: 0o755, uid: runtimeUID}, // the build stage's mkdir and chown
	}, nil)

	ctxDir := filepath.Join(dir, "context")
	dockerfile := header + "FROM " + buildImg + " AS build\n\n" + stages[1]
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerRemove(t, "image", name)
	if out, err := runDocker(5*time.Minute, nil, "build", "--force-rm", "--build-arg", "RUNTIME_BASE="+base,
		"--build-arg", "VERSION="+version, "--tag", name, ctxDir); err != nil {
		t.Fatalf("%v\n%s\nthe Dockerfile built:\n%s", err, out, dockerfile)
	}
	t.Logf("image %s: the Dockerfile's runtime stage on %s (distroless static's layout), binary %s (%d bytes, the build stage's go build line) in %v",
		name, base, version, len(bin), time.Since(t0).Round(time.Millisecond))
	return binPath
}

// distrolessLayout is what distroless static:nonroot holds that the
// connector may use: users and groups (nonroot 65532), name service
// settings, the CA certificates (this machine's), /tmp and the homes.
func distrolessLayout(t testing.TB) []tarEntry {
	t.Helper()
	es := []tarEntry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "tmp/", mode: 0o1777},
		{name: "root/", mode: 0o700},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: runtimeUID},
	}
	if certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		es = append(es, tarEntry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs})
	} else {
		t.Logf("base image without CA certificates (%v): the test's broker needs none", err)
	}
	return es
}

// tarEntry is a file (or, with a name ending in '/', a directory) of an
// image made by importImage, owned by uid:uid. A file holds data, or, when
// src is set, the content of the host's file src (read as the layer is
// written: large files need not be held in memory).
type tarEntry struct {
	name string
	mode int64
	uid  int
	data []byte
	src  string
}

// importImage makes the single-layer image name of entries with docker
// import (tarPath: where the layer is written), changes its config with
// changes (Dockerfile instructions), and removes it when the test ends.
func importImage(t testing.TB, tarPath, name string, entries []tarEntry, changes []string) {
	t.Helper()
	if err := writeLayer(tarPath, entries); err != nil {
		t.Fatalf("write the layer of image %s: %v", name, err)
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	dockerRemove(t, "image", name)
	dockerCmd(t, 2*time.Minute, append(args, tarPath, name)...)
}

// writeLayer writes entries as a tar archive to path.
func writeLayer(path string, entries []tarEntry) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	now := time.Now()
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: now, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := writeEntry(tw, h, e); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// writeEntry writes e to tw under h (whose size it sets for a file of
// the host's).
func writeEntry(tw *tar.Writer, h *tar.Header, e tarEntry) error {
	if e.src == "" {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	src, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	h.Size = info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

// ---------------------------------------------------------------------------
// Files out of a container

// copyOut copies path out of container ctr (docker cp: volumes included,
// running or stopped) into dir, and returns the archive's headers by name
// (path's base name first: "data", "data/out/...") with their owners.
// Regular files and directories only; files keep their mtimes
// (outputReader's cache goes by them).
func copyOut(ctr, path, dir string) (map[string]*tar.Header, error) {
	out, err := runDocker(2*time.Minute, nil, "cp", ctr+":"+path, "-")
	if err != nil {
		return nil, err
	}
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(strings.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("docker cp %s:%s: %w", ctr, path, err)
		}
		name := strings.TrimSuffix(filepath.Clean(h.Name), "/")
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("docker cp %s:%s: entry %q outside the copy", ctr, path, h.Name)
		}
		headers[filepath.ToSlash(name)] = h
		dst := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return nil, err
			}
			if err := os.Chtimes(dst, h.ModTime, h.ModTime); err != nil {
				return nil, err
			}
		}
	}
	return headers, nil
}
