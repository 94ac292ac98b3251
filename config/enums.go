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
