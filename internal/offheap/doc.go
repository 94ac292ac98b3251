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
// A table its owner writes all over at once is made resident in one call
// (NewResident): page by page, every new table faulted its pages in one
// at a time, which the Go heap's reused memory does not (twice the page
// faults of the whole dedup run, and ~7% more CPU). Tables do not ask for
// huge pages (MADV_HUGEPAGE, which they once did from 4 MiB): where the
// kernel's transparent_hugepage defrag is "madvise", its default, a
// region that asks for them gets them by compacting memory at once, on
// the thread that maps the table, which is the worker's: making a 5 MB
// table of bench/'s dedup took up to 52 ms, and the records and the
// barrier behind it waited (a checkpoint of 56 ms), where 4 KiB pages
// took at most 6 ms at the same CPU per record (bench/RESULTS.md,
// "2026-12-07, 20:55"). Small tables, and every table where the platform
// has no mmap, are ordinary Go slices.
package offheap
