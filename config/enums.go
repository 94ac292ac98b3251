package config

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

// DecodeErrorPolicy says what to do with a record that cannot be decoded.
type DecodeErrorPolicy string

// Decode error policies.
const (
	DecodeFail       DecodeErrorPolicy = "fail"        // fail the job
	DecodeSkip       DecodeErrorPolicy = "skip"        // drop the record and count it
	DecodeDeadLetter DecodeErrorPolicy = "dead_letter" // produce it to OnDecodeError.Topic
)
