package s3conn

import (
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Config is the connection part of a section that talks to S3. Embed it
// with `yaml:",inline"`; its Validate reports under the section's keys.
type Config struct {
	// Endpoint is an S3-compatible server, http:// or https://host[:port];
	// empty is AWS S3.
	Endpoint string `yaml:"endpoint" doc:"http(s)://host:port of an S3-compatible server; empty: AWS S3"`
	// Region signs the requests.
	Region string `yaml:"region" default:"us-east-1" doc:"the bucket's region (request signing)"`
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name; unset, it is on with an endpoint and off
	// for AWS.
	PathStyle OptionalBool `yaml:"path_style,omitempty" doc:"path-style requests; default: true when endpoint is set"`
	// AccessKeyID and SecretAccessKey are the credentials; both empty: the
	// environment's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
	// AWS_SESSION_TOKEN.
	AccessKeyID     string        `yaml:"access_key_id,omitempty" doc:"access key id; empty: AWS_ACCESS_KEY_ID from the environment"`
	SecretAccessKey secret.Secret `yaml:"secret_access_key,omitempty" doc:"secret access key; empty: AWS_SECRET_ACCESS_KEY from the environment; never printed"`
}

// Validate reports every unusable connection value under its key.
func (c *Config) Validate(p *spec.Problems) {
	if c.Endpoint != "" {
		if _, _, err := ParseEndpoint(c.Endpoint); err != nil {
			p.Add("endpoint", "%v", err)
		}
	}
	p.Required("region", c.Region)
	if (c.AccessKeyID == "") != c.SecretAccessKey.IsZero() {
		p.Add("secret_access_key", "access_key_id and secret_access_key go together: set both, or neither to take AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment")
	}
}

// ParseEndpoint splits an endpoint URL into host[:port] and TLS. Its
// errors show the URL with any credentials in it replaced (secret.RedactURL).
func ParseEndpoint(endpoint string) (host string, secure bool, err error) {
	u, err := url.Parse(endpoint)
	switch {
	case err == nil && u.User != nil:
		return "", false, fmt.Errorf("%q: credentials do not go in the URL: want http://host[:port] or https://host[:port], and access_key_id and secret_access_key beside it", secret.RedactURL(endpoint))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
		return "", false, fmt.Errorf("%q: want http://host[:port] or https://host[:port]", secret.RedactURL(endpoint))
	}
	return u.Host, u.Scheme == "https", nil
}

// Credentials returns the access key, secret and session token: the
// configured ones, else the environment's. section names the config
// section in the error ("sink", "checkpoint.s3").
func (c *Config) Credentials(section string) (id, secret, token string, err error) {
	if c.AccessKeyID != "" {
		return c.AccessKeyID, c.SecretAccessKey.Value(), "", nil
	}
	id, secret, token = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")
	if id == "" || secret == "" {
		return "", "", "", cfgkey.Wrap(section+".access_key_id", fmt.Errorf("%s.access_key_id: no credentials: set %s.access_key_id and %s.secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment", section, section, section))
	}
	return id, secret, token, nil
}

// OptionalBool is a boolean that may be left unset (its zero value).
type OptionalBool uint8

// OptionalBool values.
const (
	Unset OptionalBool = iota
	False
	True
)

// Or returns b, or def when b is unset.
func (b OptionalBool) Or(def bool) bool {
	if b == Unset {
		return def
	}
	return b == True
}

// IsZero reports whether b is unset (yaml's omitempty).
func (b OptionalBool) IsZero() bool { return b == Unset }

// UnmarshalText reads true or false.
func (b *OptionalBool) UnmarshalText(text []byte) error {
	v, err := strconv.ParseBool(string(text))
	if err != nil {
		return fmt.Errorf("%q is not a boolean", text)
	}
	*b = False
	if v {
		*b = True
	}
	return nil
}

// MarshalYAML writes true or false (unset is left out, by IsZero).
func (b OptionalBool) MarshalYAML() (any, error) { return b == True, nil }

// CheckBucket reports a bucket name S3 refuses (length, characters).
func CheckBucket(name string) error {
	if err := s3utils.CheckValidBucketNameStrict(name); err != nil {
		return fmt.Errorf("bucket %q: %w", name, err)
	}
	return nil
}

// MarshalText writes true, false, or nothing when unset.
func (b OptionalBool) MarshalText() ([]byte, error) {
	if b == Unset {
		return nil, nil
	}
	return []byte(strconv.FormatBool(b == True)), nil
}
