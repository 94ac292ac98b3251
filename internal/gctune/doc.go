// Package gctune sets the collector's GOGC while a job runs: as low as a
// small share of the process's CPU for the collector allows, between 40
// and Go's default of 100.
//
// Go's collector lets its heap grow by GOGC% of what is live before it
// collects again, so the heap's peak is about (1+GOGC/100) times the live
// heap, and a collection comes every time the job has allocated that room.
// A lower GOGC is less memory for more collections. What that costs
// depends on the job. The dedup over 1M keys of bench/ allocates about
// 0.2 GB per CPU-second (mostly its records' fetch responses, which
// franz-go allocates one by one), spends 2% of its CPU in the collector at
// GOGC=100, and ran as fast at 40 while its peak RSS fell from 134-137 to
// 110-112 MiB. The stateless 1 KB drain allocates about 1 GB per
// CPU-second, spends 5-6.5% of its CPU in the collector at 100, and spent
// 13% more CPU per record at GOGC=50 (bench/RESULTS.md, "2026-12-07,
// 09:41" and "12:40").
//
// The tuner reads the collector's share of the CPU the process used
// (runtime/metrics: /cpu/classes/gc/total over the busy classes) every
// interval, as of the last collection's end, and sets GOGC where that
// share would be Target (Policy.Next). The share goes about as 1/GOGC,
// less steeply (the dedup's: 2% at 100, 2.9% at 52, 3.6-4.4% at 40), so
// two or three steps land there unless the job changes. It starts at Min,
// the low end: a job's heap is largest as it starts, before the first
// reading. Within [Min, Max]:
// never above Go's default, never so low that collections crowd the
// checkpoints (GOGC=33 took the dedup's checkpoint p99 to 86 ms once in
// three runs; at 40 it stayed at 17-31 ms). The default's Target, 4%,
// takes the 1 KB drain to 100 at its first reading and keeps the dedup at
// 40.
//
// A GOGC set in the environment (any value, "off" too) is the user's
// choice: the tuner leaves it alone and says so in the log.
package gctune
