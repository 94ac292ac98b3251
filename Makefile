.PHONY: build test dev vet

build:
	go build -o bin/connector ./cmd/connector

test:
	scripts/test

dev:
	go run ./cmd/connector dev

vet:
	go vet ./...
