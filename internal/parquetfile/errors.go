package parquetfile

import "errors"

var (
	// ErrBadRecord classes a record value that does not fit the Schema: not a
	// JSON object, a missing or null value for a column that is not
	// nullable, a value of the wrong type or out of range. Append buffers
	// nothing for such a value; the Writer stays usable.
	ErrBadRecord = errors.New("record does not fit the parquet schema")
	// ErrBadState classes a State that Resume cannot continue from: written
	// for another schema, or inconsistent.
	ErrBadState = errors.New("parquet file state is unusable")
)
