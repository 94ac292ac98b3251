package s3test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// FaultProxy forwards to an S3 server, and lets a test answer a request
// itself (Before) or change an answer (Modify): faults a real server does
// not make on its own, forced where the test wants them.
type FaultProxy struct {
	URL string // what the client dials instead of the server

	mu     sync.Mutex
	before func(w http.ResponseWriter, r *http.Request) bool
	modify func(*http.Response) error
}

// NewFaultProxy starts a proxy to target (an endpoint URL), closed when
// the test ends. The client signs the proxy's host, which it forwards.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // signed by the client
		},
		ModifyResponse: func(r *http.Response) error {
			p.mu.Lock()
			m := p.modify
			p.mu.Unlock()
			if m != nil {
				return m(r)
			}
			return nil
		},
		FlushInterval: -1, // headers and bytes go out at once: a cut comes mid-body
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		b := p.before
		p.mu.Unlock()
		if b != nil && b(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Before sets f to see every request first: true means f answered it.
func (p *FaultProxy) Before(f func(w http.ResponseWriter, r *http.Request) bool) {
	p.mu.Lock()
	p.before = f
	p.mu.Unlock()
}

// Modify sets f to change every answer of the server.
func (p *FaultProxy) Modify(f func(*http.Response) error) {
	p.mu.Lock()
	p.modify = f
	p.mu.Unlock()
}

// WriteError answers with an S3 error document of status and code.
func WriteError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + code + `</Message><RequestId>r</RequestId></Error>`))
}
