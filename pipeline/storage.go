package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/connector-dev/connector/checkpoint/s3storage"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/sink"
)

// attachStorage connects the checkpoint store to checkpoint.storage, if
// set, and brings its newer checkpoints into the local directories
// (store.AttachRemote). It retries while the storage does not answer (the
// job is not ready meanwhile), until ctx ends or stop is closed; a
// missing bucket or refused credentials fail the job for good
// (s3storage.ErrInvalidConfig: exit 2).
func (a *attempt) attachStorage(ctx context.Context, stop <-chan struct{}, st *store.Store) error {
	cfg := a.j.cfg
	if cfg.Checkpoint.Storage == "" {
		return nil
	}
	bucket, prefix, err := config.ParseStorage(cfg.Checkpoint.Storage)
	if err != nil {
		return cfgkey.Wrap("checkpoint.storage", fmt.Errorf("%w: %w: checkpoint.storage: %w", errPermanent, s3storage.ErrInvalidConfig, err))
	}
	sctx, cancel := untilStop(ctx, stop)
	defer cancel()
	retry := sink.Retry{Log: a.j.log, Name: "checkpoint storage", System: "S3", Unreachable: s3storage.ErrUnreachable}
	err = retry.Do(sctx, "at start", func() error {
		r, err := s3storage.Open(sctx, cfg.Checkpoint.S3, bucket, prefix, cfg.Name)
		if err != nil {
			return err
		}
		return st.AttachRemote(sctx, r)
	})
	if errors.Is(err, s3storage.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	if err != nil {
		return fmt.Errorf("checkpoint storage: %w", err)
	}
	return nil
}

// untilStop returns a context that ends with ctx or when stop is closed.
func untilStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
		case <-c.Done():
		}
		cancel()
	}()
	return c, cancel
}
