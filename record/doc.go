// Package record defines the unit of data that flows through a job: a Kafka
// record with its coordinates, read by the source, passed through transforms
// and written by a sink. It owns the type and the recycling of the batches
// records travel in (NewBatch, Release); no other behaviour lives here.
package record
