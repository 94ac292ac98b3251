package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	kafkasink "github.com/connector-dev/connector/sink/kafka"
)

// checkFallback decides, before the sink recovers anything, whether the job
// may start from r.md when newer checkpoints on disk cannot be restored
// (r.skipped): their committed output would be written again. It refuses
// (errPermanent, saying what and what to do) under checkpoint.on_unrestorable
// fail, unless the sink can show that the skipped checkpoints made nothing
// visible; with fall_back, or when it is safe, it goes on and says so at
// error level (and counts it).
func (a *attempt) checkFallback(ctx context.Context, r *restoredJob, snk sink.Sink) error {
	if len(r.skipped) == 0 {
		return a.checkAhead(ctx, r, snk)
	}
	cfg, log := a.j.cfg, a.j.log
	var reasons []string
	for _, sk := range r.skipped {
		reasons = append(reasons, fmt.Sprintf("checkpoint %d: %v", sk.ID, sk.Err))
	}
	from := "no checkpoint (the source's own position, empty state)"
	var restored checkpoint.ID
	if r.md != nil {
		restored = r.md.ID
		from = fmt.Sprintf("checkpoint %d", restored)
	}
	u := &audit{a: a, snk: snk}
	defer u.close()
	visible, audited, err := u.after(ctx, restored)
	if err != nil {
		return fmt.Errorf("check the sink's output before restoring %s: %w", from, err)
	}
	safe := audited && len(visible) == 0
	if cfg.Checkpoint.OnUnrestorable != checkpoint.UnrestorableFallBack && !safe {
		what := "the sink cannot tell whether they made output visible"
		if audited {
			what = fmt.Sprintf("the sink already shows their output (%s)", sample(visible))
		}
		return fmt.Errorf("%w: the newest checkpoints cannot be restored (%s), and %s: starting from %s would write it again. "+
			"Repair what is named (a missing state file, a damaged metadata file in %s: `connector checkpoints list` shows them), "+
			"or set checkpoint.on_unrestorable: fall_back to start from %s anyway",
			errPermanent, strings.Join(reasons, "; "), what, from, cfg.Checkpoint.Dir, from)
	}
	a.j.metrics.restoreFallbacks.Inc()
	log.Error().Strs("skipped", reasons).Str("restoring", from).Int("visible_after", len(visible)).
		Bool("safe", safe).Msg("the newest checkpoints cannot be restored; restoring an older one")
	if len(visible) > 0 {
		return a.numberAfterVisible(ctx, r, u, restored)
	}
	return nil
}

// numberAfterVisible makes the job number its checkpoints after the
// newest whose output is visible (r.after), when it goes on from restored
// although output of later checkpoints is visible (fall_back). Numbered
// after restored, as the checkpoint dir alone would have them (a reset
// dir starts at 1), they came again, for other records: a sink whose
// decision record counts committed checkpoints by number (PostgreSQL's
// progress table, the Kafka sink's markers, the recording sink of the
// runtime's tests) took them as done and dropped their output, records no
// earlier checkpoint had written among it; the file sink refused to commit
// a file under a committed one's name. Numbered after every visible one,
// the checkpoints after restored are written again, as fall_back says.
func (a *attempt) numberAfterVisible(ctx context.Context, r *restoredJob, u *audit, restored checkpoint.ID) error {
	newest, err := lastVisible(restored, func(id checkpoint.ID) (bool, error) {
		visible, _, err := u.after(ctx, id)
		return len(visible) > 0, err
	})
	if err != nil {
		return fmt.Errorf("find the newest checkpoint whose output is visible: %w", err)
	}
	r.after = newest
	a.j.log.Warn().Uint64("restored", uint64(restored)).Uint64("newest_visible", uint64(newest)).
		Msg("checkpoints are numbered after the newest whose output is visible (checkpoint.on_unrestorable: fall_back)")
	return nil
}

// lastVisible is the newest checkpoint id with visible output, given that
// some is visible after id from: the least id x >= from with nothing
// visible after it. visibleAfter must be monotone (true up to that id,
// false from it on); it is asked about 2 log2(newest) times.
func lastVisible(from checkpoint.ID, visibleAfter func(checkpoint.ID) (bool, error)) (checkpoint.ID, error) {
	lo, hi := from, from // visibleAfter(lo); hi: to be found with !visibleAfter(hi)
	for step := checkpoint.ID(1); ; step *= 2 {
		if hi = lo + step; hi < lo || step == 0 {
			hi = math.MaxUint64
		}
		more, err := visibleAfter(hi)
		if err != nil {
			return 0, err
		}
		if !more {
			break
		}
		if hi == math.MaxUint64 {
			return hi, nil
		}
		lo = hi
	}
	for hi-lo > 1 { // visibleAfter(lo), !visibleAfter(hi)
		mid := lo + (hi-lo)/2
		more, err := visibleAfter(mid)
		if err != nil {
			return 0, err
		}
		if more {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// checkAhead refuses to start from r.md when the sink shows output of a
// later checkpoint: the checkpoint dir was reset or replaced (a fresh one,
// an old backup), or another instance of the job with other directories
// committed it. Starting would write that output again. With
// checkpoint.on_unrestorable: fall_back it starts anyway, at error level.
func (a *attempt) checkAhead(ctx context.Context, r *restoredJob, snk sink.Sink) error {
	if _, ok := snk.(sink.Auditor); !ok && !deadLettersExactlyOnce(a.j.cfg) {
		return nil
	}
	var restored checkpoint.ID
	cfg := a.j.cfg
	from := fmt.Sprintf("no checkpoint: %s holds none", cfg.Checkpoint.Dir)
	if r.md != nil {
		restored, from = r.md.ID, fmt.Sprintf("checkpoint %d, the newest in %s", r.md.ID, cfg.Checkpoint.Dir)
	}
	u := &audit{a: a, snk: snk}
	defer u.close()
	visible, _, err := u.after(ctx, restored)
	if err != nil {
		return fmt.Errorf("check the sink's output before restoring %s: %w", from, err)
	}
	if len(visible) == 0 {
		return nil
	}
	if cfg.Checkpoint.OnUnrestorable != checkpoint.UnrestorableFallBack {
		return fmt.Errorf("%w: the sink shows output of later checkpoints (%s) than the job would start from (%s): "+
			"the checkpoint dir was reset or replaced, or another instance of job %s with other directories wrote it; starting would write that output again. "+
			"Start with the checkpoint dir that wrote it, or remove that output (and the sink's progress records), "+
			"or set checkpoint.on_unrestorable: fall_back to start anyway",
			errPermanent, sample(visible), from, cfg.Name)
	}
	a.j.metrics.restoreFallbacks.Inc()
	a.j.log.Error().Str("restoring", from).Strs("visible_after", visible).
		Msg("the sink shows output of later checkpoints than the one restored; starting anyway (checkpoint.on_unrestorable: fall_back): it is written again")
	return a.numberAfterVisible(ctx, r, u, restored)
}

// sample names a few of many files.
func sample(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}

// audit asks what checkpoints after an id made visible: the job's sink's
// output (audited: the sink can tell, a sink.Auditor) and, with
// exactly-once dead letters, the dead-letter topic's, which is output too
// (asked through a dead-letter sink of its own: a restore from before it
// would dead-letter the same records again). That sink is opened at the
// first question and kept for the next ones (a fall-back start asks about
// 2 log2(n) of them, numberAfterVisible) until close.
type audit struct {
	a   *attempt
	snk sink.Sink
	dls *kafkasink.Sink
}

func (u *audit) close() {
	if u.dls != nil {
		_ = u.dls.Close()
	}
}

// after is what checkpoints after id made visible.
func (u *audit) after(ctx context.Context, id checkpoint.ID) (visible []string, audited bool, err error) {
	if au, ok := u.snk.(sink.Auditor); ok {
		if visible, err = au.CommittedAfter(ctx, id); err != nil {
			return nil, false, err
		}
		audited = true
	}
	cfg := u.a.j.cfg
	if !deadLettersExactlyOnce(cfg) {
		return visible, audited, nil
	}
	if u.dls == nil {
		if u.dls, err = DeadLetterSink(cfg, sink.Env{Log: u.a.j.log.With().Bool("dead_letter", true).Logger()}); err != nil {
			return nil, false, err
		}
	}
	dead, err := u.dls.CommittedAfter(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("dead-letter topic %s: %w", cfg.Pipeline.OnDecodeError.Topic, err)
	}
	for _, d := range dead {
		visible = append(visible, "dead-letter topic: "+d)
	}
	return visible, audited, nil
}
