// Package builtin links every source and sink kind of this build: importing
// it registers them (each kind's package registers itself from its init).
// The binary and the tests that load job files import it. Adding a kind to
// the build is one line here. The transforms are registered by package
// transform itself.
package builtin

import (
	_ "github.com/connector-dev/connector/sink/file"     // sink.type: file
	_ "github.com/connector-dev/connector/sink/kafka"    // sink.type: kafka
	_ "github.com/connector-dev/connector/sink/postgres" // sink.type: postgres
	_ "github.com/connector-dev/connector/sink/s3"       // sink.type: s3
	_ "github.com/connector-dev/connector/sink/stdout"   // sink.type: stdout
	_ "github.com/connector-dev/connector/source/kafka"  // source.type: kafka (the default)
	_ "github.com/connector-dev/connector/transform"     // the built-in transforms: filter, project, dedup
)
