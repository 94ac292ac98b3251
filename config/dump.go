package config

import (
	"bytes"

	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/config/secret"
)

// Dump returns the effective config (defaults filled in) as YAML, with every
// Secret written as "***" and every value that came from a ${VAR}
// reference written as the file wrote it ("${KAFKA_PASSWORD}"), since only
// the file knows which environment values are secret. It is what
// `connector validate --print` and /api/job show.
func (j *Job) Dump() ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(j); err != nil {
		return nil, err
	}
	if j.src != nil {
		j.src.restoreWritten(&n, "")
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// restoreWritten puts back, under n (the node of key path), the text the
// file wrote for every value that interpolation changed.
func (o *origin) restoreWritten(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			o.restoreWritten(n.Content[i+1], joinKey(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		if items, ok := o.writtenList[path]; ok {
			n.Content = n.Content[:0]
			for _, s := range items {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
			}
			return
		}
		for i, item := range n.Content {
			o.restoreWritten(item, indexKey(path, i))
		}
	case yaml.ScalarNode:
		if s, ok := o.written[path]; ok && n.Value != secret.Redacted { // a Secret stays "***"
			n.Tag, n.Style, n.Value = "!!str", 0, s
		}
	}
}
