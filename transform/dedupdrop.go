package transform

import (
	"bytes"
	"fmt"
	"slices"
)

// dedupPrefix begins every dedup's namespace: "transform/dedup/" Name "/".
const dedupPrefix = "transform/dedup/"

// Namespacer is a KV that lists the namespaces of its keys (package
// state's Store): the distinct beginnings of the keys that start with
// prefix, each cut after the first sep that follows it; and removes a
// range for good: Expire, which later restores do not undo (the next
// snapshot is a full one).
type Namespacer interface {
	Namespaces(prefix []byte, sep byte) ([][]byte, error)
	ExpireForGood(start, end []byte) error
}

// DropDedupState removes from kv the state of every dedup whose name is
// not in keep (DedupKeys of the job's transforms): a dedup renamed, or
// removed from the job. A Dedup expires only its own namespace, so such
// state stayed in every snapshot for good, read again at every rescale,
// and a dedup given the name back later took it for its memory, whatever
// its key. The runtime calls it at every restore, before the first record.
// It returns the names dropped; a KV that cannot list its namespaces
// (MemKV) is left as it is.
func DropDedupState(kv KV, keep map[string]string) ([]string, error) {
	ns, ok := kv.(Namespacer)
	if !ok {
		return nil, nil
	}
	spaces, err := ns.Namespaces([]byte(dedupPrefix), '/')
	if err != nil {
		return nil, fmt.Errorf("list the dedups' state: %w", err)
	}
	var dropped []string
	for _, space := range spaces {
		name, ok := bytes.CutSuffix(space[len(dedupPrefix):], []byte("/"))
		if _, kept := keep[string(name)]; !ok || kept {
			continue // not a namespace (no '/'), or a dedup of the job
		}
		end := slices.Clone(space)
		end[len(end)-1]++ // past every key under space: '/' + 1
		if err := ns.ExpireForGood(space, end); err != nil {
			return dropped, fmt.Errorf("drop the state of dedup %s: %w", name, err)
		}
		dropped = append(dropped, string(name))
	}
	return dropped, nil
}
