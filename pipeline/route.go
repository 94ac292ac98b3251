package pipeline

import (
	"fmt"
	"slices"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/source"
)

// routing is how records go from readers to workers in an attempt
// (pipeline.route): byPartition keeps each reader's records on the worker
// of the same index, else they are shuffled by key group.
type routing struct {
	byPartition bool
	why         string // for the log
}

// route decides pipeline.route for an attempt whose source is open. With
// keyed state (stateful) records must be shuffled by key group, whatever
// the setting (config validation refuses route: partition with a dedup;
// this is the runtime's own guard). auto keeps records on their reader's
// worker unless the job has key_by or the readers own unequal numbers of
// partitions (none, or 2 against 1: a worker would get nothing, or twice
// another's share, where the shuffle spreads the records over every
// worker alike).
func route(pl config.Pipeline, stateful bool, src source.Source) (routing, error) {
	switch {
	case pl.Route == config.RouteKey:
		return routing{why: "route: key"}, nil
	case stateful && pl.Route == config.RoutePartition:
		return routing{}, fmt.Errorf("%w: pipeline.route is partition, but the transforms keep keyed state, which needs records shuffled by key", errPermanent)
	case stateful:
		return routing{why: "keyed state"}, nil
	case pl.Route == config.RoutePartition:
		return routing{byPartition: true, why: "route: partition"}, nil
	case pl.KeyBy != "":
		return routing{why: "key_by"}, nil
	}
	p, ok := src.(source.Partitioned)
	if !ok {
		return routing{why: "the source does not say which partitions its readers own"}, nil
	}
	switch n := p.Owned(); {
	case len(n) == 0 || slices.Min(n) == 0:
		return routing{why: "a reader owns no partition"}, nil
	case slices.Min(n) != slices.Max(n):
		return routing{why: "readers own unequal numbers of partitions"}, nil
	}
	return routing{byPartition: true, why: "no keyed state"}, nil
}

// String names the routing in the log.
func (r routing) String() string {
	if r.byPartition {
		return string(config.RoutePartition)
	}
	return string(config.RouteKey)
}
