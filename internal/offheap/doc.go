// Package offheap allocates large tables of pointer-free words outside the
// Go heap, for the in-memory indexes that live as long as a job's state.
//
// Go's collector lets the heap grow by GOGC% of what is live before it
// collects (internal/gctune keeps GOGC between 40 and 100), so each byte
// of a table on the heap costs up to two of the process's memory; off the
// heap it costs one. A dedup over 1M keys
// held 36-48 MB of index tables (bench/RESULTS.md, "Index tables off the
// Go heap"). The tables are not counted in Go's heap metrics: the
// process's resident memory is.
//
// A table is an anonymous memory mapping, returned to the system by a
// cleanup once its *Words is unreachable (after a garbage collection): the
// owner keeps the *Words beside the slice it uses and drops both together,
// and never uses the slice after. Where the slice is read after the
// owner's last use in a function (a method of the slice called last), the
// owner needs a runtime.KeepAlive after the read. An owner that knows the
// table is no longer read gives it back at once with Free: a job whose
// heap grows slowly collects seldom, and its dropped tables stayed mapped
// until it did.
//
// Tables of 4 MiB and more ask for huge pages (Linux): in 4 KiB pages,
// every new table faulted its pages in one by one, which the Go heap's
// reused memory does not (twice the page faults of the whole dedup run,
// and ~7% more CPU). Small tables, and every table where the platform has
// no mmap, are ordinary Go slices.
package offheap
