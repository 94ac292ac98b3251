//go:build unix && !linux

package offheap

func hugePages([]byte) {}

func populate([]byte) {}
