package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestReviewObsNetHTTPComplaintsAreLoggedAtALevel: what net/http itself
// logs through Server.ErrorLog (a handler's panic, "http: Accept error:
// too many open files; retrying", a superfluous WriteHeader) reaches the
// job's log as an event with a level, so that it is filtered by log.level
// like every other line and found by a search for errors. The server hands
// net/http a *log.Logger over zerolog.Logger's Write, which logs with no
// level: the line has no "level" key and passes any log.level, even error.
func TestReviewObsNetHTTPComplaintsAreLoggedAtALevel(t *testing.T) {
	var logs syncbuf.Buffer
	s, err := Start(Config{
		Addr:  "127.0.0.1:0",
		Log:   zerolog.New(&logs).Level(zerolog.ErrorLevel),
		Ready: func() error { panic("a bug in a status handler") },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	}()
	if resp, err := http.Get("http://" + s.Addr() + "/readyz"); err == nil {
		resp.Body.Close() // net/http answers nothing to a panic: the connection is closed
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "panic serving") {
		if time.Now().After(deadline) {
			t.Fatalf("net/http's report of the panic was not logged: %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Bytes())
		}
		msg, _ := ev["message"].(string)
		if !strings.Contains(msg, "panic serving") {
			continue
		}
		if ev["level"] != "error" {
			t.Errorf("net/http's report of a handler's panic is logged with level %v (want error): %.300s", ev["level"], sc.Bytes())
		}
	}
}
