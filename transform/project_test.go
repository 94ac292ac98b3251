package transform

import (
	"errors"
	"strings"
	"testing"
)

func TestProjectReshapesTopLevelFieldsInOriginalOrder(t *testing.T) {
	const in = `{ "b" : 1, "a" : {"x": [1, 2]}, "c" : "s", "d" : null }`
	cases := []struct {
		name string
		cfg  ProjectConfig
		in   string
		want string
	}{
		{"keep keeps original order", ProjectConfig{Keep: []string{"c", "b"}}, in, `{"b":1,"c":"s"}`},
		{"keep missing field", ProjectConfig{Keep: []string{"zz"}}, in, `{}`},
		{"keep all leaves value untouched", ProjectConfig{Keep: []string{"a", "b", "c", "d"}}, in, in},
		{"drop", ProjectConfig{Drop: []string{"a", "d"}}, in, `{"b":1,"c":"s"}`},
		{"drop absent leaves value untouched", ProjectConfig{Drop: []string{"zz"}}, in, in},
		{"rename in place", ProjectConfig{Rename: map[string]string{"a": "alpha"}}, in, `{"b":1,"alpha":{"x": [1, 2]},"c":"s","d":null}`},
		{"rename absent source leaves value untouched", ProjectConfig{Rename: map[string]string{"zz": "b"}}, in, in},
		{"rename replaces existing target", ProjectConfig{Rename: map[string]string{"c": "b"}}, in, `{"a":{"x": [1, 2]},"b":"s","d":null}`},
		{"rename swap", ProjectConfig{Rename: map[string]string{"a": "b", "b": "a"}}, `{"a":1,"b":2}`, `{"b":1,"a":2}`},
		{"rename needs quoting", ProjectConfig{Rename: map[string]string{"b": `q"u\o`}}, `{"b":1}`, `{"q\"u\\o":1}`},
		{"keep then rename", ProjectConfig{Keep: []string{"b", "c"}, Rename: map[string]string{"b": "bee"}}, in, `{"bee":1,"c":"s"}`},
		{"drop then rename", ProjectConfig{Drop: []string{"a"}, Rename: map[string]string{"b": "bee"}}, in, `{"bee":1,"c":"s","d":null}`},
		{"escaped key matches", ProjectConfig{Keep: []string{"k"}}, `{"\u006b":1,"j":2}`, `{"\u006b":1}`},
		{"empty object", ProjectConfig{Keep: []string{"a"}}, `{}`, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProject(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rec(tc.in)
			if !mustApply(t, p, r) {
				t.Fatal("project dropped the record")
			}
			if string(r.Value) != tc.want {
				t.Errorf("value = %s, want %s", r.Value, tc.want)
			}
		})
	}
}

func TestProjectTwiceSeesTheFirstRename(t *testing.T) {
	p1, _ := NewProject(ProjectConfig{Rename: map[string]string{"a": "b"}})
	p2, _ := NewProject(ProjectConfig{Keep: []string{"b"}, Rename: map[string]string{"b": "c"}})
	c := NewChain(p1, p2)
	r := rec(`{"a":1,"x":2}`)
	if !mustApply(t, c, r) || string(r.Value) != `{"c":1}` {
		t.Errorf("value = %s, want {\"c\":1}", r.Value)
	}
}

func TestProjectConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		cfg  ProjectConfig
		want string
	}{
		{ProjectConfig{}, "project: needs keep, drop or rename"},
		{ProjectConfig{Keep: []string{"a"}, Drop: []string{"b"}}, "project: keep and drop are exclusive"},
		{ProjectConfig{Keep: []string{}}, "project.keep: is empty"},
		{ProjectConfig{Keep: []string{""}}, "project.keep: has an empty name"},
		{ProjectConfig{Drop: []string{""}}, "project.drop: has an empty name"},
		{ProjectConfig{Rename: map[string]string{"a": ""}}, `project.rename: "a" -> "": names must not be empty`},
		{ProjectConfig{Keep: []string{"b"}, Rename: map[string]string{"a": "x"}}, `project.rename.a: "a" is not in keep`},
		{ProjectConfig{Drop: []string{"a"}, Rename: map[string]string{"a": "x"}}, `project.rename.a: "a" is in drop`},
		{ProjectConfig{Rename: map[string]string{"a": "x", "b": "x"}}, `project.rename.b: "a" and "b" are both renamed to "x"`},
	}
	for _, tc := range cases {
		_, err := NewProject(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewProject(%+v) = %v, want ErrInvalidConfig containing %q", tc.cfg, err, tc.want)
		}
	}
}
