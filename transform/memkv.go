package transform

// MemKV is a KV in memory, for tests and benchmarks. It is not snapshotted
// with checkpoints, so state in it does not survive a restart; it is not
// safe for concurrent use.
type MemKV struct {
	m map[string][]byte
}

var _ KV = (*MemKV)(nil)

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return &MemKV{m: make(map[string][]byte)} }

// Get returns the value under key.
func (kv *MemKV) Get(key []byte) ([]byte, bool, error) {
	v, ok := kv.m[string(key)]
	return v, ok, nil
}

// Set stores a copy of value under key, overwriting in place when it can.
func (kv *MemKV) Set(key, value []byte) error {
	if old, ok := kv.m[string(key)]; ok && len(old) == len(value) {
		copy(old, value)
		return nil
	}
	kv.m[string(key)] = append([]byte(nil), value...)
	return nil
}

// Delete removes key.
func (kv *MemKV) Delete(key []byte) error {
	delete(kv.m, string(key))
	return nil
}

// Expire removes the keys in [start, end).
func (kv *MemKV) Expire(start, end []byte) error {
	for k := range kv.m {
		if k >= string(start) && k < string(end) {
			delete(kv.m, k)
		}
	}
	return nil
}

// Scan calls fn with the keys in [start, end) and their values.
func (kv *MemKV) Scan(start, end []byte, fn func(key, value []byte) error) error {
	for k, v := range kv.m {
		if k >= string(start) && k < string(end) {
			if err := fn([]byte(k), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Len returns the number of entries.
func (kv *MemKV) Len() int { return len(kv.m) }
