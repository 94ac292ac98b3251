package config

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// Dump returns the effective config (defaults filled in) as YAML, with every
// Secret written as "***". It is what `connector validate --print` shows.
func (j *Job) Dump() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
