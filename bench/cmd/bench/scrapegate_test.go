package main

import (
	"testing"
	"time"
)

// The gate lets a scrape through at every poll until a record is out,
// then every scrapeSpacing, then at every poll again from 90% of the
// records out.
func TestScrapeGateSpacesScrapesBetweenTheFirstRecordAndTheLastTenth(t *testing.T) {
	g := scrapeGate{total: 1000}
	t0 := time.Unix(1000, 0)
	poll := 20 * time.Millisecond
	steps := []struct {
		at   time.Duration // since t0
		due  bool
		out  int64 // what the scrape counts, when due
		name string
	}{
		{0, true, 0, "the first poll"},
		{poll, true, 1, "no record out yet at the last scrape"},
		{2 * poll, false, 0, "a record out, 0.1%: spaced"},
		{scrapeSpacing - time.Millisecond, false, 0, "just before the spacing is over"},
		{poll + scrapeSpacing, true, 899, "the spacing over"},
		{2*poll + scrapeSpacing, false, 0, "89.9% out: spaced"},
		{poll + 2*scrapeSpacing, true, 900, "the spacing over"},
		{2*poll + 2*scrapeSpacing, true, 950, "90% out: every poll"},
		{3*poll + 2*scrapeSpacing, true, 1000, "95% out: every poll"},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		if got := g.due(now); got != st.due {
			t.Fatalf("at %v (%s): due %v, want %v", st.at, st.name, got, st.due)
		}
		if st.due {
			g.saw(now, st.out)
		}
	}
}
