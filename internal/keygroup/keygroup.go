package keygroup

import (
	"fmt"
)

const (
	// DefaultMax is the max parallelism of a job that does not set one.
	DefaultMax = 128
	// MaxLimit is the largest max parallelism: a key group is stored as
	// two bytes, and more key groups only cost more bookkeeping.
	MaxLimit = 1 << 15
)

// Validate reports whether max is a usable max parallelism (1..MaxLimit).
func Validate(max int) error {
	if max < 1 || max > MaxLimit {
		return fmt.Errorf("keygroup: max parallelism %d is not in 1..%d", max, MaxLimit)
	}
	return nil
}

// Of returns key's key group among max (FNV-1a 64 of the key modulo max).
// The hash is fixed, not seeded per process: state restored after a restart
// must meet the same keys in the same key groups. max must be valid (see
// Validate); Of panics on max < 1.
func Of(key []byte, max int) int {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return int(h % uint64(max))
}

// Range is a contiguous, half-open range of key groups: Start, Start+1, ...,
// End-1. A range with End <= Start is empty, the zero Range among them.
type Range struct {
	Start, End int
}

// Len returns the number of key groups in r (0 if empty).
func (r Range) Len() int { return max(r.End-r.Start, 0) }

// Empty reports whether r holds no key group.
func (r Range) Empty() bool { return r.End <= r.Start }

// Contains reports whether kg is in r.
func (r Range) Contains(kg int) bool { return r.Start <= kg && kg < r.End }

// Intersect returns the key groups in both r and o; if there are none, the
// zero Range.
func (r Range) Intersect(o Range) Range {
	out := Range{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
	if out.Empty() {
		return Range{}
	}
	return out
}

// String formats r as "[start,end)", or "[]" if it is empty.
func (r Range) String() string {
	if r.Empty() {
		return "[]"
	}
	return fmt.Sprintf("[%d,%d)", r.Start, r.End)
}

// RangeOf returns the key groups that worker index of parallelism owns,
// Flink's formula (KeyGroupRangeAssignment): from ceil(index*max/parallelism)
// to ceil((index+1)*max/parallelism), exclusive. It panics unless
// 1 <= parallelism <= max and 0 <= index < parallelism: a worker count above
// max would leave workers without a key group, which the job's config
// validation refuses before any worker starts.
func RangeOf(max, parallelism, index int) Range {
	check(max, parallelism)
	if index < 0 || index >= parallelism {
		panic(fmt.Sprintf("keygroup: worker index %d out of 0..%d", index, parallelism-1))
	}
	return Range{Start: ceilDiv(index*max, parallelism), End: ceilDiv((index+1)*max, parallelism)}
}

// OperatorOf returns the worker (0..parallelism-1) whose RangeOf holds key
// group kg: kg*parallelism/max. It panics on the same arguments as RangeOf,
// or if kg is not in 0..max-1.
func OperatorOf(kg, max, parallelism int) int {
	check(max, parallelism)
	if kg < 0 || kg >= max {
		panic(fmt.Sprintf("keygroup: key group %d out of 0..%d", kg, max-1))
	}
	return kg * parallelism / max
}

func check(max, parallelism int) {
	if err := Validate(max); err != nil {
		panic(err.Error())
	}
	if parallelism < 1 || parallelism > max {
		panic(fmt.Sprintf("keygroup: parallelism %d is not in 1..%d (the max parallelism)", parallelism, max))
	}
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0. a is at most MaxLimit squared:
// no overflow.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
