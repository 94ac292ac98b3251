package main

import (
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/rs/zerolog"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "go.yaml.in/yaml/v3"
)

func main() {}
