package transform

import (
	"encoding/json"
	"sort"

	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
)

// ProjectConfig reshapes the top level of a JSON object value: Keep (only
// these fields) or Drop (all but these), never both; then Rename (old name
// -> new name). Keep and Drop name fields by their original names, so a
// renamed field must be kept (or not dropped). Fields keep their original
// order; a renamed field stays where it was. If a renamed field's new name
// is already taken by a field of the record, the renamed field replaces it.
// Names are top-level keys, matched exactly (dots are not paths here).
type ProjectConfig struct {
	Keep   []string          `yaml:"keep,omitempty" doc:"only these top-level fields"`
	Drop   []string          `yaml:"drop,omitempty" doc:"all but these top-level fields"`
	Rename map[string]string `yaml:"rename,omitempty" doc:"old name -> new name"`
}

func init() {
	Register(Kind{
		Name:    KindProject,
		Summary: "keeps, drops and renames the top-level fields of a JSON object value",
		Config:  func() any { return new(ProjectConfig) },
		New:     func(cfg any, _ KV) (Transform, error) { return NewProject(*cfg.(*ProjectConfig)) },
	})
}

// Validate reports the first problem NewProject would find.
func (c *ProjectConfig) Validate(p *spec.Problems) {
	_, err := NewProject(*c)
	report(p, KindProject, err)
}

// Project is the project transform. Build it with NewProject.
type Project struct {
	keepMode bool
	acts     map[string]projAct
	present  []bool // per rename source, reused for each record
	solo     solo
}

type projAct struct {
	keep   bool   // named in Keep
	drop   bool   // named in Drop
	rename int    // index+1 of the rename whose source this is; 0: none
	to     string // new name (rename sources)
	toQ    []byte // new name, JSON-quoted
	target int    // index+1 of the rename whose target this is; 0: none
}

var _ Transform = (*Project)(nil)

// NewProject validates cfg and returns its Project.
func NewProject(cfg ProjectConfig) (*Project, error) {
	if cfg.Keep != nil && cfg.Drop != nil {
		return nil, configError("project", "keep and drop are exclusive; use one")
	}
	if cfg.Keep == nil && cfg.Drop == nil && len(cfg.Rename) == 0 {
		return nil, configError("project", "needs keep, drop or rename")
	}
	p := &Project{keepMode: cfg.Keep != nil, acts: make(map[string]projAct)}
	if p.keepMode && len(cfg.Keep) == 0 {
		return nil, configError("project.keep", "is empty (it would drop every field)")
	}
	for _, k := range cfg.Keep {
		if k == "" {
			return nil, configError("project.keep", "has an empty name")
		}
		a := p.acts[k]
		a.keep = true
		p.acts[k] = a
	}
	for _, k := range cfg.Drop {
		if k == "" {
			return nil, configError("project.drop", "has an empty name")
		}
		a := p.acts[k]
		a.drop = true
		p.acts[k] = a
	}
	// Sorted so errors (and rename indexes) do not depend on map order.
	from := make([]string, 0, len(cfg.Rename))
	for k := range cfg.Rename {
		from = append(from, k)
	}
	sort.Strings(from)
	targets := make(map[string]string)
	for i, old := range from {
		to := cfg.Rename[old]
		key := "project.rename." + old
		switch a := p.acts[old]; {
		case old == "" || to == "":
			return nil, configError("project.rename", "%q -> %q: names must not be empty", old, to)
		case p.keepMode && !a.keep:
			return nil, configError(key, "%q is not in keep, so it is gone before the rename", old)
		case a.drop:
			return nil, configError(key, "%q is in drop, so it is gone before the rename", old)
		}
		if prev, dup := targets[to]; dup {
			return nil, configError(key, "%q and %q are both renamed to %q", prev, old, to)
		}
		targets[to] = old
		q, _ := json.Marshal(to) // a string always marshals
		a := p.acts[old]
		a.rename, a.to, a.toQ = i+1, to, q
		p.acts[old] = a
	}
	for i, old := range from {
		to := cfg.Rename[old]
		a := p.acts[to]
		a.target = i + 1
		p.acts[to] = a
	}
	p.present = make([]bool, len(from)+1)
	return p, nil
}

// Kind returns "project".
func (p *Project) Kind() string { return KindProject }

// Apply reshapes r's value.
func (p *Project) Apply(r *record.Record) (bool, error) { return p.solo.apply(p, r) }

func (p *Project) applyDoc(_ *record.Record, d *document) (bool, error) {
	if err := d.parse(); err != nil {
		return false, err
	}
	renames := len(p.present) > 1
	if renames {
		clear(p.present)
	}
	// Pass 1: keep/drop, and note which rename sources are present.
	out := d.fields[:0]
	for i := range d.fields {
		f := d.fields[i]
		a, named := lookupKey(d, &f, p.acts)
		if (p.keepMode && !a.keep) || a.drop {
			continue
		}
		if named && a.rename > 0 {
			p.present[a.rename] = true
		}
		out = append(out, f)
	}
	changed := len(out) != len(d.fields)
	d.fields = out
	if renames {
		// Pass 2: rename, and drop fields a present rename overwrites.
		out = d.fields[:0]
		for i := range d.fields {
			f := d.fields[i]
			a, named := lookupKey(d, &f, p.acts)
			if named && a.rename > 0 {
				d.rename(&f, a.to, a.toQ)
				changed = true
			} else if named && a.target > 0 && p.present[a.target] {
				changed = true
				continue
			}
			out = append(out, f)
		}
		d.fields = out
	}
	d.dirty = d.dirty || changed
	return true, nil
}
