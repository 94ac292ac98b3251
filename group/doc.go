// Package group runs a job shared by several processes (instances.mode:
// group): it owns the process's membership in the job's Kafka consumer
// group and the slots the group gives it. Kafka's group protocol is the
// only distributed machinery: it assigns, its coordinator notices a dead
// member (instances.session_timeout) and starts a rebalance; nothing here
// elects a leader or keeps a membership list.
//
// # Slots
//
// The job's partitions are split into instances.slots fixed slots:
// partition p of every topic belongs to slot p mod slots. A slot is run as
// a job of its own (package pipeline), named <name>.slot-<k>, with its own
// checkpoints (<checkpoint.dir>/slot-<k>), keyed state
// (<state.dir>/slot-<k>), consumer group for its offsets
// (<source.group>.slot-<k>) and sink identity (the sinks derive file names,
// transactional ids and progress rows from the job's name). So a slot
// carries its source positions, its keyed state and its pending sink
// output from one process to the next through the shared directories,
// and every mechanism that makes a restart exactly-once (restore, sink
// recovery) makes a handover exactly-once: a handover is a stop with a
// final checkpoint in one process and a restart in another.
//
// Keyed state is exact within a slot: a dedup sees every record of a key
// only if every record of that key is in one slot, that is in one
// partition (key_by the Kafka key, with producers partitioning by it, as
// Kafka Streams requires too). Repartitioning by a field across processes
// is not built.
//
// # Assignment
//
// The group assigns the partitions of a topic of the job's own,
// <name>.slots, with one partition per slot (created at start if missing;
// its partition count must equal instances.slots). No record is ever
// written to it or fetched from it: its partitions are the slots, handed
// out by Kafka's own assignors, cooperative-sticky with the classic
// protocol, the broker's uniform assignor with KIP-848 (instances.protocol:
// consumer). The group is <name>.slots too.
//
// The path of a slot: OnPartitionsAssigned starts it (slot.run): take its
// lock, then run its job until stopped. OnPartitionsRevoked (a rebalance
// moves it; cooperative: only the moved slots) and OnPartitionsLost (this
// member was dropped from the group) stop it: its job's context ends, the
// job takes its final checkpoint, commits it to the sink and the offsets
// to the slot's group, and returns; then the lock is released, and only
// then does the callback return and the rebalance go on. Stop (SIGTERM)
// starts every slot's final checkpoint and leaves the group at once,
// without waiting for them: the others are given the slots in the next
// rebalance (not after the session timeout), and each new owner takes its
// slot as soon as that slot's lock is released, so a slot's stall is its
// own final checkpoint, not the slowest slot's.
//
// # Fencing
//
// A slot's lock (<checkpoint.dir>/slot-<k>.lock, fcntl) is held from before
// its job opens anything until after it stopped. Only its holder writes the
// slot's checkpoints or commits its sink output, so no two processes ever
// run one slot, whatever the group believes: a process paused (SIGSTOP,
// a long GC, a frozen VM) past the session timeout keeps its lock, and the
// new owner waits for it; when the paused one resumes, the group tells it
// its slots are lost, it stops them and releases them. The stall this
// costs is the pause; output is never doubled. A process that dies loses
// its locks with it (the kernel releases them). The lock is as strong as
// the filesystem's: on one host, or NFSv4 (a client that lost its lease
// gets errors on the files, not a second lock). Object storage has no
// such lock: checkpoint.storage is refused in group mode until a lease
// (a conditional put) is built. The sinks' own fencing stays as a second
// line (the kafka sink's transactional ids, one set per slot).
//
// # Observability
//
// Info (/api/job) lists the member, its generation, and each slot it owns
// with that slot's job (partitions, lag, last checkpoint). Each slot's job
// metrics are served with a slot label; the group's own metrics count
// rebalance callbacks and time handovers (metrics.go).
package group
