package file

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// File names (see the package documentation):
//
//	.inprogress.part-<job>-w<writer>-<seq>.<ext>   written, not pre-committed
//	.pending.part-<job>-w<writer>-<n>-<seq>.<ext>  pre-committed at barrier n
//	part-<job>-w<writer>-<n>-<seq>.<ext>           committed, visible
//
// seq counts the parts a writer opened since it started; n is the checkpoint
// whose PreCommit renamed the part to pending.
const (
	inProgressPrefix = ".inprogress."
	pendingPrefix    = ".pending."
)

type names struct {
	job, ext string
	hidden   *regexp.Regexp // this job's in-progress and pending names
	final    *regexp.Regexp // this job's committed names
}

func newNames(job, ext string) names {
	j := regexp.QuoteMeta(job)
	// The job name is followed by "-w" and digits and dashes only, so job
	// "a" never claims the files of job "a-w1" and the reverse.
	return names{
		job:    job,
		ext:    ext,
		hidden: regexp.MustCompile(`^\.(inprogress|pending)\.part-` + j + `-w\d+(-\d+)+\.(jsonl|raw)$`),
		final:  regexp.MustCompile(`^part-` + j + `-w\d+-(\d+)-\d+\.(jsonl|raw)$`),
	}
}

func (n names) inProgress(writer, seq int) string {
	return fmt.Sprintf("%spart-%s-w%d-%d.%s", inProgressPrefix, n.job, writer, seq, n.ext)
}

func (n names) finalName(writer int, id checkpoint.ID, seq int) string {
	return fmt.Sprintf("part-%s-w%d-%d-%d.%s", n.job, writer, id, seq, n.ext)
}

func pendingName(final string) string { return pendingPrefix + final }

func (n names) ownHidden(name string) bool { return n.hidden.MatchString(name) }

// committedAt returns the checkpoint in a committed name of this job (the
// barrier whose pre-commit wrote it); false for any other name.
func (n names) committedAt(name string) (checkpoint.ID, bool) {
	m := n.final.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseUint(m[1], 10, 64)
	return checkpoint.ID(id), err == nil
}

// lockName is the job's lock file in the output directory: hidden, and not
// a name Recover removes.
func (n names) lockName() string { return ".lock." + n.job }

// fileCommittable is the Data of a file sink Committable: the committed names
// of its files; each pending name is pendingName(final).
type fileCommittable struct {
	Files []string `json:"files"`
}

func (n names) encode(id checkpoint.ID, writer int, finals []string) sink.Committable {
	data, err := json.Marshal(fileCommittable{Files: finals})
	if err != nil {
		panic(fmt.Sprintf("file sink: marshal committable: %v", err)) // []string always marshals
	}
	return sink.Committable{Checkpoint: id, Writer: writer, Data: data}
}

// decode returns the final names of c, refusing any name that is not a
// committed name of this job (a path, another job's file).
func (n names) decode(c sink.Committable) ([]string, error) {
	var fc fileCommittable
	if err := json.Unmarshal(c.Data, &fc); err != nil {
		return nil, fmt.Errorf("%w: checkpoint %d writer %d: %w", sink.ErrBadCommittable, c.Checkpoint, c.Writer, err)
	}
	for _, f := range fc.Files {
		if !n.final.MatchString(f) {
			return nil, fmt.Errorf("%w: checkpoint %d writer %d: %q is not a file name of job %q",
				sink.ErrBadCommittable, c.Checkpoint, c.Writer, f, n.job)
		}
	}
	return fc.Files, nil
}
