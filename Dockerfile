# The connector as a container: one job per container, configured by the
# YAML file mounted at /etc/connector/config.yaml.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t connector .
#
# Works with BuildKit and with the classic builder: /data is made in the
# build stage, owned by the runtime user (65532, distroless "nonroot"), and
# copied with its owner, so a fresh volume mounted there is writable.
#
# The runtime stage's base, distroless "static" (CA certificates, /etc/passwd
# with nonroot 65532, /tmp; no shell), may come from elsewhere, a mirror for
# one, with --build-arg RUNTIME_BASE=... . e2e/container_test.go builds the
# runtime stage below, as it is, on a base of that layout made locally.
ARG RUNTIME_BASE=gcr.io/distroless/static-debian12:nonroot
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# With cgo, linked statically (the runtime base has no C library): Pebble's
# memtables and block cache then live in C memory, outside the Go heap that
# the collector lets grow to twice what is live (without cgo the dedup of
# bench/ peaked 10-14 MiB higher); netgo and osusergo keep the resolver and
# user lookups in Go, which a static C library cannot serve.
RUN CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo -ldflags "-s -w -linkmode external -extldflags -static -X main.version=${VERSION}" -o /connector ./cmd/connector
RUN mkdir -p /data && chown 65532:65532 /data

FROM ${RUNTIME_BASE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="connector" \
      org.opencontainers.image.description="Exactly-once Kafka-to-sink connector" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /connector /connector
COPY --from=build --chown=65532:65532 /data /data
USER 65532:65532
WORKDIR /data
# Reachable from outside the container (the binary's default is loopback).
ENV HTTP_ADDR=0.0.0.0:8080
# /data holds checkpoints, state and (for the file sink) output: mount a volume.
VOLUME ["/data"]
EXPOSE 8080
# /healthz: 503 when the pipeline is wedged (http.stall_intervals). The
# health check asks the job's own http.addr, read from the same file as
# CMD's: a job mounted elsewhere needs both changed (docker run --health-cmd).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["/connector", "healthcheck", "--config", "/etc/connector/config.yaml"]
ENTRYPOINT ["/connector"]
CMD ["run", "--config", "/etc/connector/config.yaml"]
