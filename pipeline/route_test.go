package pipeline

import (
	"errors"
	"testing"

	"github.com/connector-dev/connector/config"
)

// TestRouteNeverKeepsKeyedStateOffItsKeyGroups: config validation refuses
// route: partition with a dedup; were it bypassed, the runtime still
// refuses to route a stateful job by partition (a worker's keyed state
// would meet keys of another worker's key groups), as a permanent error.
func TestRouteNeverKeepsKeyedStateOffItsKeyGroups(t *testing.T) {
	_, err := route(config.Pipeline{Route: config.RoutePartition}, true, &scriptedSource{})
	if !errors.Is(err, errPermanent) {
		t.Fatalf("route partition with keyed state: %v, want a permanent error", err)
	}
	for _, r := range []config.Route{config.RouteAuto, config.RouteKey} {
		rt, err := route(config.Pipeline{Route: r}, true, &scriptedSource{})
		if err != nil || rt.byPartition {
			t.Errorf("route %s with keyed state: by partition %v, error %v; want the shuffle by key", r, rt.byPartition, err)
		}
	}
}
