package config

import (
	"strings"

	"github.com/connector-dev/connector/internal/spec"
)

// fillDefaults resolves the plugins (a section with a default kind gets it)
// and applies every `default` tag of the job's structs to the fields that
// set reports absent and that are still zero: for a file, set is "the key
// had a value", so an explicit 0 stays 0 (and validation may reject it);
// for a Job built in code, set is always false, so zero means unset.
func fillDefaults(j *Job, set func(key string) bool) {
	j.Source.resolve(SectionSource)
	j.Sink.resolve(SectionSink)
	for i := range j.Pipeline.Transforms {
		j.Pipeline.Transforms[i].resolve(SectionTransform)
	}
	spec.NormalizeAll(j)
	if err := spec.Fill(j, "", set); err != nil {
		panic(err) // a malformed default tag: a bug, found by the defaults tests
	}
}

// Normalize puts kafka: values into their canonical form before defaults
// and validation: brokers entries are split on commas (so one variable can
// hold several brokers) and trimmed; the SASL mechanism is upper-cased.
func (k *Kafka) Normalize() {
	var brokers []string
	for _, b := range k.Brokers {
		for _, part := range strings.Split(b, ",") {
			if part = strings.TrimSpace(part); part != "" {
				brokers = append(brokers, part)
			}
		}
	}
	k.Brokers = brokers
	k.SASL.Mechanism = SASLMechanism(strings.ToUpper(string(k.SASL.Mechanism)))
}
