// Package binpages gives back the pages of the connector's own binary that
// starting the process touched and a running job no longer reads.
//
// The kernel maps a binary's code and read-only data into a process as
// they are first read, and counts them in its resident set (RssFile) until
// the process exits. Starting reads much that a running job never reads
// again: every linked package's initialisers and tables (the sinks, the
// clients and the codecs a job does not use among them), the config's
// parsing and checks, the HTTP server's set-up. A job then reads its own
// paths only.
//
// Release drops the binary's read-only mappings from the process's page
// tables (madvise MADV_DONTNEED). What the job reads again is mapped again
// from the page cache on its first read (a minor fault); the rest stays
// out of the resident set. Only mappings of the executable's file that are
// not writable and hold no page of their own (Anonymous: 0 in smaps) are
// dropped: a page a process changed (the relocations the C library of a
// static binary applies at start, in a segment made read-only after) would
// be lost, not read again. Nothing is unmapped: the pages stay in the page
// cache, clean, for the kernel to reclaim or to map again.
//
// What comes back is more than what a job reads: a fault maps the pages
// around the one read too (64 KiB by default), and the collector reads the
// binary's function tables for every frame it scans. In bench/'s dedup over
// 1M keys the binary held 24 MiB at the peak without Release, 19-20 with
// it: the code 12 -> 7.6 MiB; its read-only data and function tables,
// which the collector and the allocator read, came back nearly whole.
//
// Release is Linux's only; elsewhere it does nothing.
package binpages
