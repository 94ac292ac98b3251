// Package syncbuf has a byte buffer that several goroutines may write and
// read at once: where tests collect a process's or a job's log lines while
// it runs.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times substr occurs in what was written so far.
func (b *Buffer) Count(substr string) int {
	return strings.Count(b.String(), substr)
}
