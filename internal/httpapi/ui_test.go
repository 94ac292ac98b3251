package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestJobServesJSONAndItsErrorsAsJSON(t *testing.T) {
	type info struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	var fail error
	s := start(t, Config{Job: func() (any, error) { return info{"orders", "running"}, fail }})
	r := get(t, s, "/api/job")
	var got info
	if r.code != 200 || r.contentType != "application/json" || json.Unmarshal([]byte(r.body), &got) != nil || got != (info{"orders", "running"}) {
		t.Errorf("got %d %q: %s", r.code, r.contentType, r.body)
	}
	fail = errors.New("read the job: gone")
	r = get(t, s, "/api/job")
	if r.code != 500 || r.contentType != "application/json" || r.body != "{\"error\":\"read the job: gone\"}\n" {
		t.Errorf("on error: got %d %q: %s", r.code, r.contentType, r.body)
	}
}

func TestJobWithoutAJobIs503(t *testing.T) {
	s := start(t, Config{})
	if r := get(t, s, "/api/job"); r.code != 503 || !strings.Contains(r.body, `"error"`) {
		t.Errorf("got %d %s", r.code, r.body)
	}
}

// TestThePageAndItsAssetsAreServedWithTheirTypes: / is the embedded page,
// which loads its scripts and style sheet from /ui/ (nothing from another
// origin); only "/" itself is the page, other unknown paths stay 404.
func TestThePageAndItsAssetsAreServedWithTheirTypes(t *testing.T) {
	s := start(t, Config{})
	page := get(t, s, "/")
	if page.code != 200 || page.contentType != "text/html; charset=utf-8" || !strings.HasPrefix(page.body, "<!doctype html>") {
		t.Fatalf("/: got %d %q: %.80s", page.code, page.contentType, page.body)
	}
	for _, a := range []struct{ path, contentType, has string }{
		{"/ui/app.js", "text/javascript; charset=utf-8", `getJSON("/api/job")`},
		{"/ui/charts.js", "text/javascript; charset=utf-8", "function drawDurations("},
		{"/ui/style.css", "text/css; charset=utf-8", ":root {"},
	} {
		if !strings.Contains(page.body, `"`+a.path+`"`) {
			t.Errorf("the page does not load %s", a.path)
		}
		r := get(t, s, a.path)
		if r.code != 200 || r.contentType != a.contentType || !strings.Contains(r.body, a.has) {
			t.Errorf("%s: got %d %q, body has %q: %v", a.path, r.code, r.contentType, a.has, strings.Contains(r.body, a.has))
		}
	}
	if strings.Contains(page.body, "http://") || strings.Contains(page.body, "https://") {
		t.Error("the page refers to another origin; everything it needs must be embedded")
	}
	for _, path := range []string{"/index.html", "/nope", "/ui/", "/ui/nope.js", "/api"} {
		if r := get(t, s, path); r.code != 404 {
			t.Errorf("%s: got %d, want 404", path, r.code)
		}
	}
}
