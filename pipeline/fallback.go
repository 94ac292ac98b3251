package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
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
		return nil
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
	var visible []string
	audited := false
	if au, ok := snk.(sink.Auditor); ok {
		var err error
		if visible, err = au.CommittedAfter(ctx, restored); err != nil {
			return fmt.Errorf("check the sink's output before restoring %s: %w", from, err)
		}
		audited = true
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
	return nil
}

// sample names a few of many files.
func sample(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}
