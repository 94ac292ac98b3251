package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/connector-dev/connector/internal/metrics"

	// Linked so that version reports them even before the run command
	// imports them for real.
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("version", command{
		summary: "print the connector, Go, franz-go and Pebble versions",
		run:     runVersion,
	})
}

// runVersion prints one "<name> <version>" line per component:
//
//	connector dev
//	go go1.26.8
//	franz-go v1.22.3
//	pebble v2.1.7
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "", stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	b := buildInfo()
	fmt.Fprintf(stdout, "connector %s\n", b.Version)
	fmt.Fprintf(stdout, "go %s\n", cmp.Or(b.GoVersion, "unknown"))
	fmt.Fprintf(stdout, "franz-go %s\n", b.FranzGo)
	fmt.Fprintf(stdout, "pebble %s\n", b.Pebble)
	return exitOK
}

// buildInfo is the versions runVersion prints and connector_build_info's
// labels say.
func buildInfo() metrics.BuildInfo {
	info, _ := debug.ReadBuildInfo()
	b := metrics.BuildInfo{
		Version: versionOf(version, info),
		FranzGo: moduleVersion(info, "github.com/twmb/franz-go"),
		Pebble:  moduleVersion(info, "github.com/cockroachdb/pebble/v2"),
	}
	if info != nil {
		b.GoVersion = info.GoVersion
	}
	return b
}

// versionOf is the version set at build time (-X main.version), else
// what the Go toolchain recorded: the module's version when built with
// go install module@version, or the VCS revision of the checkout it was
// built in (with "-dirty" for uncommitted changes), else "dev".
func versionOf(set string, info *debug.BuildInfo) string {
	if set != "dev" || info == nil {
		return set
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		return "dev-" + rev + dirty
	}
	return set
}

// moduleVersion returns the version of module path linked into the binary
// (the replacement's, if replaced), or "unknown".
func moduleVersion(info *debug.BuildInfo, path string) string {
	if info == nil {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path != path {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if m.Version == "" {
			return "(devel)"
		}
		return m.Version
	}
	return "unknown"
}
