package config

import "strings"

// SASLMechanism names a SASL mechanism; Load upper-cases it.
type SASLMechanism string

// SASL mechanisms.
const (
	SASLNone        SASLMechanism = ""
	SASLPlain       SASLMechanism = "PLAIN"
	SASLScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLScramSHA512 SASLMechanism = "SCRAM-SHA-512"
	SASLOAuthBearer SASLMechanism = "OAUTHBEARER"
	SASLAWSMSKIAM   SASLMechanism = "AWS_MSK_IAM"
)

// Enum lists the mechanisms (for the JSON Schema), in either case, as
// Load upper-cases them.
func (SASLMechanism) Enum() []string {
	var out []string
	for _, m := range []SASLMechanism{SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer, SASLAWSMSKIAM} {
		out = append(out, string(m), strings.ToLower(string(m)))
	}
	return out
}

// DecodeErrorPolicy says what to do with a record that cannot be decoded.
type DecodeErrorPolicy string

// Decode error policies.
const (
	DecodeFail       DecodeErrorPolicy = "fail"        // fail the job
	DecodeSkip       DecodeErrorPolicy = "skip"        // drop the record and count it
	DecodeDeadLetter DecodeErrorPolicy = "dead_letter" // produce it to OnDecodeError.Topic
)

// Enum lists the policies (for the JSON Schema).
func (DecodeErrorPolicy) Enum() []string {
	return []string{string(DecodeFail), string(DecodeSkip), string(DecodeDeadLetter)}
}

// Route says which worker a record goes to (pipeline.route).
type Route string

// Routes.
const (
	// RouteAuto is RoutePartition for a job that keeps no keyed state,
	// has no key_by and whose readers own as many partitions each; else
	// RouteKey.
	RouteAuto Route = "auto"
	// RouteKey shuffles records by key group (key_by, else the Kafka key):
	// all records of a key reach one worker.
	RouteKey Route = "key"
	// RoutePartition keeps records on the worker of their reader: a
	// partition's records stay together, in order, on one worker.
	RoutePartition Route = "partition"
)

// Enum lists the routes (for the JSON Schema).
func (Route) Enum() []string {
	return []string{string(RouteAuto), string(RouteKey), string(RoutePartition)}
}
