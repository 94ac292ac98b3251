package file

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// File names (see the package documentation), in sink.path or in a bucket
// directory under it (path_template):
//
//	.inprogress.part-<job>-w<writer>-<F>-<seq>.<ext>   written, not committed
//	part-<job>-<C>-w<writer>-<i>.<ext>                 committed, visible
//
// F is one more than the last barrier the writer had passed when it opened
// the file, and seq counts the files it opened since that barrier, in any
// bucket: together they name a file uniquely among the files Recover keeps. C is the
// checkpoint whose pre-commit rolled the file, and i numbers the files that
// pre-commit rolled. F and C have 12 digits, so committed names sort by the
// checkpoint that made them (by time), then by writer.
//
// Earlier versions named committed files part-<job>-w<writer>-<n>-<seq> and
// pre-committed ones .pending.<committed name>: both are still recognised
// (committables of their checkpoints are still committed, their hidden
// files still removed).
const (
	inProgressPrefix = ".inprogress."
	pendingPrefix    = ".pending." // earlier versions' pre-committed files
	idDigits         = 12
)

type names struct {
	job, ext   string
	hidden     *regexp.Regexp // this job's in-progress and (former) pending names
	inProgress *regexp.Regexp // this job's in-progress names of this version
	final      *regexp.Regexp // this job's committed names; group 1 is C
	legacy     *regexp.Regexp // this job's committed names of earlier versions; group 1 is n
}

func newNames(job, ext string) names {
	j := regexp.QuoteMeta(job)
	// The job name is followed by "-w" or 12 digits and "-w", then digits
	// and dashes only, so job "a" never claims the files of job "a-w1" and
	// the reverse.
	return names{
		job:        job,
		ext:        ext,
		hidden:     regexp.MustCompile(`^\.(inprogress|pending)\.part-` + j + `-w\d+(-\d+)+\.(jsonl|raw|parquet)$`),
		inProgress: regexp.MustCompile(`^\.inprogress\.part-` + j + `-w\d+-\d{12,}-\d+\.(jsonl|raw|parquet)$`),
		final:      regexp.MustCompile(`^part-` + j + `-(\d{12,})-w\d+-\d+\.(jsonl|raw|parquet)$`),
		legacy:     regexp.MustCompile(`^part-` + j + `-w\d+-(\d+)-\d+\.(jsonl|raw|parquet)$`),
	}
}

// inProgressName names the seq-th file a writer opened after barrier
// first-1.
func (n names) inProgressName(writer int, first checkpoint.ID, seq int) string {
	return fmt.Sprintf("%spart-%s-w%d-%0*d-%d.%s", inProgressPrefix, n.job, writer, idDigits, first, seq, n.ext)
}

// finalName names the i-th file writer's pre-commit of checkpoint id rolled.
func (n names) finalName(writer int, id checkpoint.ID, i int) string {
	return fmt.Sprintf("part-%s-%0*d-w%d-%d.%s", n.job, idDigits, id, writer, i, n.ext)
}

// finalNameOf is finalName for the open file begun as of: with its
// extension, the format it holds (the config's may have changed since).
func (n names) finalNameOf(of string, writer int, id checkpoint.ID, i int) string {
	name := n.finalName(writer, id, i)
	if ext := path.Ext(of); ext != "" {
		name = strings.TrimSuffix(name, "."+n.ext) + ext
	}
	return name
}

func pendingName(final string) string { return pendingPrefix + final }

func (n names) ownHidden(name string) bool { return n.hidden.MatchString(name) }

// own reports whether name is a file name of this job, hidden or
// committed.
func (n names) own(name string) bool {
	return n.hidden.MatchString(name) || n.final.MatchString(name) || n.legacy.MatchString(name)
}

// committedAt returns the checkpoint in a committed name of this job (the
// barrier whose pre-commit rolled it); false for any other name.
func (n names) committedAt(name string) (checkpoint.ID, bool) {
	m := n.final.FindStringSubmatch(name)
	if m == nil {
		m = n.legacy.FindStringSubmatch(name)
	}
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseUint(m[1], 10, 64)
	return checkpoint.ID(id), err == nil
}

// lockName is the job's lock file in the output directory: hidden, and not
// a name Recover removes.
func (n names) lockName() string { return ".lock." + n.job }

// fileCommittable is the Data of a file sink Committable. Rolled lists
// the files a pre-commit rolled, to be renamed into place by Commit;
// OpenFiles are the files still growing at the barrier (one per bucket of
// path_template), which Commit leaves alone and Recover cuts back to their
// sizes and hands to the writer again. Paths are relative to sink.path,
// '/'-separated: <bucket>/<name>, or <name> in sink.path itself.
//
// Open is what versions before path_template recorded, one open file in
// sink.path; Files what earlier versions recorded: committed names, each
// pre-committed under pendingName. Both are still read.
type fileCommittable struct {
	Rolled    []rename    `json:"rolled,omitempty"`
	OpenFiles []openState `json:"open_files,omitempty"`
	Open      *openState  `json:"open,omitempty"`
	Files     []string    `json:"files,omitempty"`
}

// rename is one rolled file: its in-progress path and its committed path,
// in the same bucket.
type rename struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// openState is a writer's open file at a barrier: Size bytes of it are
// durable and hold every record of its bucket the writer took before the
// barrier that no rolled file holds. Opened (Unix milliseconds) is when
// the file opened, for roll_age.
type openState struct {
	Name   string         `json:"name"`
	Size   int64          `json:"size"`
	Opened int64          `json:"opened"`
	Format *filefmt.State `json:"format,omitempty"` // parquet: what continuing or closing it takes
}

func (n names) encode(id checkpoint.ID, writer int, fc fileCommittable) sink.Committable {
	data, err := json.Marshal(fc)
	if err != nil {
		panic(fmt.Sprintf("file sink: marshal committable: %v", err)) // strings and numbers always marshal
	}
	return sink.Committable{Checkpoint: id, Writer: writer, Data: data}
}

// decode returns c's files to rename into place and its open files,
// refusing any path that is not a file of this job in sink.path or in a
// bucket under it (an absolute path, "..", another job's file).
func (n names) decode(c sink.Committable) ([]rename, []openState, error) {
	var fc fileCommittable
	if err := json.Unmarshal(c.Data, &fc); err != nil {
		return nil, nil, fmt.Errorf("%w: checkpoint %d writer %d: %w", sink.ErrBadCommittable, c.Checkpoint, c.Writer, err)
	}
	bad := func(name string) error {
		return fmt.Errorf("%w: checkpoint %d writer %d: %q is not a file of job %q under sink.path", sink.ErrBadCommittable, c.Checkpoint, c.Writer, name, n.job)
	}
	renames := fc.Rolled
	for _, r := range fc.Rolled {
		from, ok := n.path(r.From, n.inProgress)
		if !ok {
			return nil, nil, bad(r.From)
		}
		if to, ok := n.path(r.To, n.final); !ok || to != from {
			return nil, nil, bad(r.To)
		}
	}
	for _, f := range fc.Files {
		if !n.legacy.MatchString(f) && !n.final.MatchString(f) {
			return nil, nil, bad(f)
		}
		renames = append(renames, rename{From: pendingName(f), To: f})
	}
	opens := fc.OpenFiles
	if fc.Open != nil {
		opens = append([]openState{*fc.Open}, opens...)
	}
	for _, o := range opens {
		if _, ok := n.path(o.Name, n.inProgress); !ok || o.Size < 0 {
			return nil, nil, bad(o.Name)
		}
	}
	return renames, opens, nil
}

// path checks a recorded path: a name re matches, in sink.path or in a
// bucket pathtmpl.ValidDir accepts. It returns the bucket.
func (n names) path(p string, re *regexp.Regexp) (bucket string, ok bool) {
	bucket, name := pathtmpl.Split(p)
	return bucket, re.MatchString(name) && (bucket == "" || pathtmpl.ValidDir(bucket))
}
