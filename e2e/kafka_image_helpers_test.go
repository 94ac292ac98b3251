package e2e

// The Kafka image of the compose test (compose_test.go): a stand-in for
// apache/kafka, which these machines cannot pull, made with docker import
// from this machine's own material: the JDK that runs scripts/kafka's
// broker (its symlinks resolved, the shared libraries ldd names for its
// binaries and .so files), /bin/sh (dash), env and tr for the start
// script, and the jars of `scripts/kafka fetch`. It keeps the parts of
// apache/kafka's interface that docker-compose.yml uses, so that the
// kafka service's environment, command (none: the image's) and health
// check stay the file's own:
//
//   - its command, /etc/kafka/docker/run (testdata/kafka-image/run), turns
//     the KAFKA_* environment into server.properties by apache/kafka's
//     rule, formats the log dir (KRaft) and runs the broker in the
//     foreground, logging to stdout;
//   - /opt/kafka/bin/kafka-broker-api-versions.sh runs the class the real
//     script runs, org.apache.kafka.tools.BrokerApiVersionsCommand: the
//     file's health check;
//   - it runs as appuser (1000), as apache/kafka does.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	kafkaImageJavaHome = "/opt/java/openjdk"
	kafkaImageHome     = "/opt/kafka"
	kafkaImageUID      = 1000 // appuser, as in apache/kafka
)

// buildKafkaImage makes the image name (see the top of this file) and
// returns the Kafka version in it (scripts/kafka's). The image is removed
// when the test ends.
func buildKafkaImage(t *testing.T, name string) string {
	t.Helper()
	t0 := time.Now()
	version := strings.TrimSpace(scriptOutput(t, 10*time.Second, "../scripts/kafka", "version"))
	scriptOutput(t, 10*time.Minute, "../scripts/kafka", "fetch") // cached after the first time
	lib := filepath.Join("..", ".cache", "kafka", version, "lib")
	jars, err := filepath.Glob(filepath.Join(lib, "*.jar"))
	if err != nil || len(jars) == 0 {
		t.Fatalf("no jars in %s after scripts/kafka fetch (%v)", lib, err)
	}
	javaHome := hostJavaHome(t)

	fsys := newRootfs()
	fsys.dir("etc/", 0o755, 0)
	fsys.add(tarEntry{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\n" +
		"appuser:x:1000:1000::/home/appuser:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")})
	fsys.add(tarEntry{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nappuser:x:1000:\nnogroup:x:65534:\n")})
	fsys.add(tarEntry{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")})
	fsys.dir("tmp/", 0o1777, 0)
	fsys.dir("root/", 0o700, 0)
	fsys.dir("home/appuser/", 0o755, kafkaImageUID)
	fsys.dir(kafkaImageHome[1:]+"/config/", 0o755, kafkaImageUID)

	// The shell and the two commands the start script runs, then the JDK.
	var elfs []string // host files whose shared libraries the image needs
	for _, c := range []struct{ name, host string }{{"bin/sh", "/bin/sh"}, {"usr/bin/env", "env"}, {"usr/bin/tr", "tr"}} {
		p, err := exec.LookPath(c.host)
		if err != nil {
			t.Fatalf("the Kafka image needs %s from this machine: %v", c.host, err)
		}
		if err := fsys.hostFile(c.name, p); err != nil {
			t.Fatal(err)
		}
		elfs = append(elfs, p)
	}
	jdkFiles, dangling, err := fsys.hostTree(kafkaImageJavaHome[1:], javaHome, skipJDK)
	if err != nil {
		t.Fatalf("copy the JDK %s: %v", javaHome, err)
	}
	for _, f := range jdkFiles {
		if f == filepath.Join(javaHome, "bin", "java") || strings.HasSuffix(f, ".so") {
			elfs = append(elfs, f)
		}
	}
	libs, missing, err := sharedLibraries(elfs, javaHome)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if err := fsys.hostFile(l[1:], l); err != nil {
			t.Fatal(err)
		}
	}

	// Kafka: the jars, the scripts and log settings of testdata/kafka-image.
	for _, j := range jars {
		if err := fsys.hostFile(kafkaImageHome[1:]+"/libs/"+filepath.Base(j), j); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		name string
		mode int64
	}{
		{"etc/kafka/docker/run", 0o755},
		{kafkaImageHome[1:] + "/bin/kafka-broker-api-versions.sh", 0o755},
		{kafkaImageHome[1:] + "/config/log4j2.properties", 0o644},
		{kafkaImageHome[1:] + "/config/tools-log4j2.properties", 0o644},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "kafka-image", path.Base(f.name)))
		if err != nil {
			t.Fatal(err)
		}
		fsys.add(tarEntry{name: f.name, mode: f.mode, data: data})
	}

	importImage(t, filepath.Join(t.TempDir(), "kafka.tar"), name, fsys.entries, []string{
		"ENV PATH=" + kafkaImageJavaHome + "/bin:" + kafkaImageHome + "/bin:/usr/bin:/bin",
		"ENV JAVA_HOME=" + kafkaImageJavaHome,
		"USER appuser",
		"WORKDIR " + kafkaImageHome,
		"EXPOSE 9092",
		`CMD ["/etc/kafka/docker/run"]`,
	})
	t.Logf("image %s: Kafka %s (%d jars), the JDK of %s with %d shared libraries (%d files, %d MiB), /bin/sh, env, tr in %v",
		name, version, len(jars), javaHome, len(libs), len(fsys.entries), fsys.size>>20, time.Since(t0).Round(time.Millisecond))
	if len(dangling) > 0 {
		t.Logf("left out: the JDK's dangling links %v", dangling)
	}
	if len(missing) > 0 {
		t.Logf("left out: libraries ldd did not find on this machine %v (for JDK .so files a headless broker does not load)", missing)
	}
	return version
}

// skipJDK is what of a JDK the broker does not run: the compiler's
// symbols, modules for jlink, headers, manuals, legal notices, sources.
func skipJDK(rel string) bool {
	switch rel {
	case "jmods", "include", "man", "legal", "docs", "demo", "lib/src.zip", "lib/ct.sym":
		return true
	}
	return strings.HasPrefix(rel, "bin/") && rel != "bin/java"
}

// hostJavaHome is the home of the java on the PATH (scripts/kafka's).
func hostJavaHome(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("java")
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		t.Fatalf("the Kafka image needs this machine's java (17+, as scripts/kafka): %v", err)
	}
	return filepath.Dir(filepath.Dir(p))
}

// sharedLibraries returns the shared libraries that ldd names for elfs,
// outside javaHome (the JDK's own are copied with it), the dynamic loader
// included, as the absolute paths the binaries look for them under; and
// the names ldd did not find (libjvm.so, found by the launcher at run
// time, is not counted).
func sharedLibraries(elfs []string, javaHome string) (libs, missing []string, err error) {
	for _, f := range elfs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "ldd", f).Output()
		cancel()
		if err != nil && len(out) == 0 {
			return nil, nil, fmt.Errorf("ldd %s: %v", f, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			var lib string
			switch {
			case len(fields) >= 3 && fields[1] == "=>" && fields[2] == "not":
				if fields[0] != "libjvm.so" && !slices.Contains(missing, fields[0]) {
					missing = append(missing, fields[0])
				}
				continue
			case len(fields) >= 3 && fields[1] == "=>":
				lib = fields[2]
			case len(fields) >= 1 && filepath.IsAbs(fields[0]):
				lib = fields[0] // the dynamic loader
			default:
				continue // linux-vdso, "statically linked"
			}
			lib = filepath.Clean(lib)
			if !strings.HasPrefix(lib, javaHome+"/") && !slices.Contains(libs, lib) {
				libs = append(libs, lib)
			}
		}
	}
	slices.Sort(libs)
	return libs, missing, nil
}

// scriptOutput runs a repository script and returns its stdout; it fails
// the test, with the script's stderr, when the script fails.
func scriptOutput(t *testing.T, timeout time.Duration, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// rootfs collects the entries of an image made by importImage, each
// directory before what it holds (made 0755, root's, when first needed).
type rootfs struct {
	entries []tarEntry
	seen    map[string]bool
	size    int64
}

func newRootfs() *rootfs { return &rootfs{seen: map[string]bool{}} }

// dir adds the directory name (ending in '/').
func (r *rootfs) dir(name string, mode int64, uid int) {
	r.parents(name)
	if !r.seen[name] {
		r.seen[name] = true
		r.entries = append(r.entries, tarEntry{name: name, mode: mode, uid: uid})
	}
}

func (r *rootfs) parents(name string) {
	for d := path.Dir(strings.TrimSuffix(name, "/")); d != "." && d != "/"; d = path.Dir(d) {
		if !r.seen[d+"/"] {
			r.dir(d+"/", 0o755, 0)
		}
	}
}

// add adds the file e; a second file of the same name is ignored.
func (r *rootfs) add(e tarEntry) {
	if r.seen[e.name] {
		return
	}
	r.parents(e.name)
	r.seen[e.name] = true
	r.entries = append(r.entries, e)
	r.size += int64(len(e.data))
}

// hostFile adds the host's file src (symlinks resolved: the image gets
// the content) as name, with src's permissions.
func (r *rootfs) hostFile(name, src string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	r.add(tarEntry{name: name, mode: int64(info.Mode().Perm()), src: src})
	r.size += info.Size()
	return nil
}

// hostTree adds the host's tree src under name, but for the paths
// (relative to src, slash-separated) skip says to leave out. Symlinks are
// resolved (a link out of the tree, as Debian's JDK has into /etc, gets
// its target's content); dangling ones are left out and returned. It
// returns the host paths of the files added.
func (r *rootfs) hostTree(name, src string, skip func(rel string) bool) (files, dangling []string, err error) {
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := os.Stat(p) // through symlinks
		if err != nil {
			dangling = append(dangling, p)
			return nil
		}
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			r.dir(name+"/"+rel+"/", int64(info.Mode().Perm()), 0)
		case info.IsDir():
			return fmt.Errorf("%s: a symlink to a directory", p)
		default:
			files = append(files, p)
			return r.hostFile(name+"/"+rel, p)
		}
		return nil
	})
	return files, dangling, err
}
