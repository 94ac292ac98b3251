// Package record defines the unit of data that flows through a job: a Kafka
// record with its coordinates, read by the source, passed through transforms
// and written by a sink. It owns the type only; no package behaviour lives here.
package record
