# The connector as a container: one job per container, configured by the
# YAML file mounted at /etc/connector/config.yaml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /connector ./cmd/connector

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /connector /connector
WORKDIR /data
# /data holds checkpoints, state and (for the file sink) output: mount a volume.
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/connector"]
CMD ["run", "--config", "/etc/connector/config.yaml"]
