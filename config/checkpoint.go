package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/internal/spec"
)

// Checkpoint is the checkpoint: section: the coordinator's keys (package
// checkpoint owns them and their checks) and where completed checkpoints
// are kept besides checkpoint.dir and state.dir.
type Checkpoint struct {
	checkpoint.Config `yaml:",inline"`
	// Storage is shared storage every completed checkpoint is saved to
	// (metadata and state files), so that a process on another machine
	// restores it: "" (none: the local directories only) or
	// s3://bucket[/prefix]; the job's checkpoints go under
	// <prefix>/<job name>/. The local directories stay the working copy.
	Storage string `yaml:"storage" doc:"shared checkpoint storage, so another machine can restore: s3://bucket/prefix (the job's checkpoints under <prefix>/<name>/); empty: checkpoint.dir and state.dir only"`
	// S3 is how to reach the storage of an s3:// URL.
	S3 s3conn.Config `yaml:"s3" doc:"with storage: s3://...: endpoint, region, path_style, access_key_id, secret_access_key"`
}

// Validate checks the storage keys; the coordinator's keys are checked by
// checkpoint.Config's own Validate (the tree walk calls both).
func (c *Checkpoint) Validate(p *spec.Problems) {
	if c.Storage == "" {
		return
	}
	if _, _, err := ParseStorage(c.Storage); err != nil {
		p.Add("storage", "%v", err)
	}
}

// ParseStorage splits an s3://bucket[/prefix] URL; the prefix, when not
// empty, ends with '/'. Its errors show the URL with any credentials in it
// replaced (secret.RedactURL).
func ParseStorage(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		return "", "", fmt.Errorf("%q: credentials do not go in the URL: want s3://bucket or s3://bucket/prefix, and checkpoint.s3.access_key_id and secret_access_key", secret.RedactURL(s))
	case err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return "", "", fmt.Errorf("%q: want s3://bucket or s3://bucket/prefix (the only storage besides the local directories)", secret.RedactURL(s))
	}
	if err := s3conn.CheckBucket(u.Host); err != nil {
		return "", "", fmt.Errorf("%q: %w", s, err)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, prefix, nil
}
