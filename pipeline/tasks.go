package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
)

const (
	sourcePrefix = "source-"
	workerPrefix = "worker-"
)

func sourceTask(i int) checkpoint.TaskID {
	return checkpoint.TaskID(fmt.Sprintf("%s%d", sourcePrefix, i))
}
func workerTask(i int) checkpoint.TaskID {
	return checkpoint.TaskID(fmt.Sprintf("%s%d", workerPrefix, i))
}

func isSource(t checkpoint.TaskID) bool { return strings.HasPrefix(string(t), sourcePrefix) }
func isWorker(t checkpoint.TaskID) bool { return strings.HasPrefix(string(t), workerPrefix) }

func taskIDs(parallelism int) []checkpoint.TaskID {
	ids := make([]checkpoint.TaskID, 0, 2*parallelism)
	for i := range parallelism {
		ids = append(ids, sourceTask(i))
	}
	for i := range parallelism {
		ids = append(ids, workerTask(i))
	}
	return ids
}

// sendEvent reports to the driver; it gives up when the task is stopped.
func sendEvent(ctx context.Context, events chan<- checkpoint.Event, ev checkpoint.Event) error {
	select {
	case events <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
