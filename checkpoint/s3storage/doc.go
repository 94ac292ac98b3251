// Package s3storage is checkpoint storage on S3-compatible object storage
// (checkpoint.storage: s3://bucket/prefix): the store.Remote that keeps a
// job's completed checkpoints under <prefix><job>/ in a bucket, so that a
// process on another machine restores them.
//
// It owns the mapping of the store's keys to objects and the reading of S3
// errors for the store; what is saved, when, and what is deleted belong to
// package checkpoint/store (AttachRemote, Persist, Collect). Connection
// settings are package internal/s3conn's.
//
// # Layout
//
//	<prefix><job>/chk-<id>.meta             checkpoint id's metadata (the local file's bytes)
//	<prefix><job>/state/<path>              a state file, path relative to state.dir
//
// Every object is written with one PUT, which S3 makes visible whole or
// not at all: a reader never sees half a file. The store writes the state
// files before the metadata that references them, and deletes them before
// the metadata that referenced them (a checkpoint missing files does not
// verify, so none wins a restore half deleted), so the metadata is the
// decision record: a checkpoint is in storage when its chk-<id>.meta is.
//
// # One writer
//
// The store assumes it is the only writer of <prefix><job>/: a second
// process of the same job writing there at the same time (one per machine,
// each with its own local directories) is not fenced by this package.
// Running one process of a job at a time is the operator's duty until the
// job runs over Kafka's group protocol.
package s3storage
