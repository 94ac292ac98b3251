package config

import (
	"strings"

	"github.com/connector-dev/connector/internal/spec"
)

// fillDefaults resolves the plugins (a section with a default kind gets it)
// and applies every `default` tag of the job's structs to the fields that
// src reports absent and that are still zero: for a file, "absent" is "the
// key had no value", so an explicit 0 stays 0 (and validation may reject
// it); for a Job built in code (src nil), zero means unset. A key
// defaulted from another key ("@/name") takes that key's written text
// too, so Dump shows "${JOB_NAME}" for both, never the value.
func fillDefaults(j *Job, src *origin) {
	j.Source.resolve(SectionSource)
	j.Sink.resolve(SectionSink)
	for i := range j.Pipeline.Transforms {
		j.Pipeline.Transforms[i].resolve(SectionTransform)
	}
	spec.NormalizeAll(j)
	if d, ok := j.Sink.Config.(JobDefaulter); ok {
		d.DefaultJob(j, src.isSet)
	}
	// The keys a reference will fill, and the keys they copy, in the order
	// Fill copies them (so a chain of references is followed).
	type ref struct{ key, from string }
	var refs []ref
	for _, f := range spec.Fields(j, "") {
		if from, ok := f.RefKey(""); ok && !src.isSet(f.Key) && f.Value.IsZero() {
			refs = append(refs, ref{f.Key, from})
		}
	}
	if err := spec.Fill(j, "", src.isSet); err != nil {
		panic(err) // a malformed default tag: a bug, found by the defaults tests
	}
	for _, r := range refs {
		src.inherit(r.key, r.from)
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
