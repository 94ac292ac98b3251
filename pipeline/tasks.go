package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
)

// taskKind is what a task of the graph is.
type taskKind uint8

const (
	sourceTask taskKind = iota // a source reader
	workerTask                 // aligner, transforms and sink writer
)

var taskKindNames = [...]string{sourceTask: "source", workerTask: "worker"}

// task identifies one task of the graph: its kind and index. Its ID
// ("source-0", "worker-3") names it to the Coordinator and in checkpoint
// metadata, so it must stay stable across versions.
type task struct {
	kind  taskKind
	index int
}

func (t task) ID() checkpoint.TaskID {
	return checkpoint.TaskID(taskKindNames[t.kind] + "-" + strconv.Itoa(t.index))
}

func (t task) String() string { return string(t.ID()) }

// parseTask reads an ID written by task.ID.
func parseTask(id checkpoint.TaskID) (task, error) {
	name, num, ok := strings.Cut(string(id), "-")
	n, err := strconv.Atoi(num)
	if ok && err == nil && n >= 0 && strconv.Itoa(n) == num {
		for k, kn := range taskKindNames {
			if kn == name {
				return task{kind: taskKind(k), index: n}, nil
			}
		}
	}
	return task{}, fmt.Errorf("bad task name %q", id)
}

// taskIDs lists the tasks of a graph of the given parallelism: every source
// reader and every worker.
func taskIDs(parallelism int) []checkpoint.TaskID {
	ids := make([]checkpoint.TaskID, 0, 2*parallelism)
	for _, k := range []taskKind{sourceTask, workerTask} {
		for i := range parallelism {
			ids = append(ids, task{k, i}.ID())
		}
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
