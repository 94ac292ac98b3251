package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/connector-dev/connector/checkpoint/s3storage"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/s3conn"
)

// readOnlyRemote is checkpoint storage as the commands use it. Attaching
// only lists and reads it; the store writes and deletes there only in
// Persist and Collect, which no command calls. Refused here all the same:
// a command must never change what the job restores.
type readOnlyRemote struct{ store.Remote }

var errReadOnly = errors.New("the checkpoints and txns commands never write checkpoint storage")

func (readOnlyRemote) Put(context.Context, string, io.Reader, int64) error { return errReadOnly }
func (readOnlyRemote) Delete(context.Context, string) error                { return errReadOnly }

// empty reports whether the storage holds nothing of the job (an error
// counts as not empty: the attach then says what is wrong).
func (r readOnlyRemote) empty(ctx context.Context) bool {
	keys, err := r.List(ctx, "")
	return err == nil && len(keys) == 0
}

// openStorage connects to job's checkpoint.storage; nil, and ok, when it
// is not set, or cannot be read and the command goes on without it.
func openStorage(ctx context.Context, job *config.Job, cmd string, strict bool, stderr io.Writer) (*readOnlyRemote, int, bool) {
	if job.Checkpoint.Storage == "" {
		return nil, exitOK, true
	}
	bucket, prefix, err := config.ParseStorage(job.Checkpoint.Storage)
	if err != nil {
		fmt.Fprintf(stderr, "%s: checkpoint.storage: %v\n", cmd, err)
		return nil, exitUsage, false
	}
	r, err := s3storage.Open(ctx, job.Checkpoint.S3, bucket, prefix, job.Name)
	if err != nil {
		code, ok := storageFailed(cmd, job.Checkpoint.Storage, strict, err, stderr)
		return nil, code, ok
	}
	return &readOnlyRemote{r}, exitOK, true
}

// storageFailed reports err from checkpoint storage at place: exit 2 for a
// config error; for any other, a refusal if strict (exit 1), else a
// warning that the local directory alone is shown, and ok.
func storageFailed(cmd, place string, strict bool, err error, stderr io.Writer) (code int, ok bool) {
	switch {
	case errors.Is(err, s3storage.ErrInvalidConfig):
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitUsage, false
	case s3conn.Denied(err):
		fmt.Fprintf(stderr, "%s: checkpoint.s3.access_key_id: checkpoint storage %s refused access: check the credentials and their permissions (%v)\n", cmd, place, err)
		return exitUsage, false
	case strict:
		fmt.Fprintf(stderr, "%s: refused: checkpoint storage %s cannot be read, and the local checkpoint directory may be older than the checkpoint the job would restore from it: which transactions that checkpoint needs cannot be told; try again when the storage answers\n(%v)\n", cmd, place, err)
		return exitFailure, false
	}
	fmt.Fprintf(stderr, "%s: WARNING: checkpoint storage %s cannot be read: what follows is the local checkpoint directory only, which may be older than the checkpoint the job would restore\n(%v)\n", cmd, place, err)
	return exitOK, true
}
