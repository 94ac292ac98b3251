// Package slicepool recycles the backing arrays of short-lived slices (the
// record batches of the data path, the record arrays franz-go decodes into)
// through a sync.Pool, without allocating in the steady state. It owns the
// pooling only: what is in a slice, and when it is free, is the caller's.
package slicepool
