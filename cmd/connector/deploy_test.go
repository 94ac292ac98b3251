package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The container files say what issue 15 asks of them. This reads the
// files; e2e/container_test.go builds the runtime stage (on a base made
// locally: RUNTIME_BASE) and runs it, so the shipped base is checked here.
func TestContainerFilesAsShipped(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	docker := read("Dockerfile")
	for _, want := range []string{
		"ARG RUNTIME_BASE=gcr.io/distroless/static-debian12:nonroot\n", // the shipped base
		"\nFROM ${RUNTIME_BASE}\n",
		"chown 65532:65532 /data", // /data owned by the runtime user under any builder
		"COPY --from=build --chown=65532:65532 /data /data",
		"USER 65532:65532",
		"ENV HTTP_ADDR=0.0.0.0:8080",                                                  // reachable from outside the container
		`CMD ["/connector", "healthcheck", "--config", "/etc/connector/config.yaml"]`, // HEALTHCHECK without a shell, asking the job's http.addr
		`CMD ["run", "--config", "/etc/connector/config.yaml"]`,                       // the same file
		"org.opencontainers.image.version=\"${VERSION}\"",
		"-X main.version=${VERSION}",
	} {
		if !strings.Contains(docker, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if _, ok := commands["healthcheck"]; !ok {
		t.Error("the Dockerfile's HEALTHCHECK runs `connector healthcheck`, which is not a command")
	}
	ignore := read(".dockerignore")
	for _, want := range []string{".cache", ".git"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(ignore) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	compose := read("docker-compose.yml")
	version := regexp.MustCompile(`(?m)^DEFAULT_VERSION=(\S+)$`).FindStringSubmatch(read("scripts/kafka"))
	if version == nil || !strings.Contains(compose, "image: apache/kafka:"+version[1]) {
		t.Errorf("docker-compose.yml's Kafka is not the tests' (%v)", version)
	}
	if !strings.Contains(compose, `command: ["produce", "--config", "/etc/connector/config.yaml"`) {
		t.Error("docker-compose.yml has no sample producer (connector produce)")
	}
}
