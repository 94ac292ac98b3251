//go:build unix && !linux

package offheap

func populate([]byte) {}
