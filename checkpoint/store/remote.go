package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
)

// Remote is the shared storage the store keeps its checkpoints in besides
// the local directories (checkpoint.storage: object storage), so that a
// process on another machine restores them. Keys are relative to the job's
// place in it: chk-<id>.meta for metadata (the local file's bytes) and
// state/<path> for a state file (path relative to the state root).
//
// A call that returns nil took effect durably; an error means it did not,
// or may not have: implementations retry what they can before returning.
type Remote interface {
	// Put stores size bytes from body at key, replacing what was there.
	Put(ctx context.Context, key string, body io.Reader, size int64) error
	// Get opens the object at key; an error classed ErrNotFound when
	// there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns every key under prefix with its size.
	List(ctx context.Context, prefix string) (map[string]int64, error)
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// String names the place in logs and errors (s3://bucket/prefix/).
	String() string
}

// remoteState is what the store knows of its Remote: kept in memory from
// AttachRemote on, and updated by each save and clean-up (the store is the
// only writer of the job's place).
type remoteState struct {
	r Remote
	// metas maps each checkpoint on the remote to the state files it
	// references; nil for one whose metadata does not verify.
	metas map[checkpoint.ID]map[string]struct{}
	// objects are the state files on the remote, by path.
	objects map[string]int64
	// damaged are the checkpoints on the remote newer than the newest
	// valid local one whose metadata does not verify, newest first: not
	// downloaded, and reported by LoadLatest as skipped, as a damaged
	// local one is, so that checkpoint.on_unrestorable decides.
	damaged []Skipped
}

const (
	remoteStatePrefix = "state/"
	// remoteTimeout bounds each of the store's remote operations (a
	// save's uploads, a clean-up, the attach).
	remoteTimeout = 2 * time.Minute
	// remoteConcurrency is how many files move at once.
	remoteConcurrency = 4
)

// AttachRemote makes r the store's shared storage. It runs once, after Open
// and before LoadLatest, and brings the remote's news down: every
// checkpoint on r newer than the newest valid one in the local directory
// is copied into it (its state files first, each synced, then its
// metadata), so that LoadLatest, on a new machine or an old one, finds the
// newest checkpoint saved anywhere. MaxID then accounts for r's ids. From
// then on Persist uploads each checkpoint to r before writing it locally,
// and Collect applies retention on r too.
//
// An error leaves the store as it was before the call (without a remote);
// files already downloaded stay, and a checkpoint whose metadata was not
// written locally does not count.
func (s *Store) AttachRemote(ctx context.Context, r Remote) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	keys, err := r.List(ctx, "")
	if err != nil {
		return fmt.Errorf("checkpoint storage %s: list: %w", r, err)
	}
	rs := &remoteState{r: r, metas: map[checkpoint.ID]map[string]struct{}{}, objects: map[string]int64{}}
	var ids []checkpoint.ID
	for k, size := range keys {
		if id, tmp, ok := parseName(k); ok && !tmp {
			ids = append(ids, id)
		} else if p, ok := strings.CutPrefix(k, remoteStatePrefix); ok && validStatePath(p) == nil {
			rs.objects[p] = size
			// A save that died after uploading state files and before its
			// metadata left files named for its id: that id must not be
			// used again, or the next checkpoint's files of the same name
			// would be taken for uploaded (file names are not content).
			if id, ok := statePathID(p); ok {
				s.maxID = max(s.maxID, id)
			}
		} else {
			s.log.Warn().Str("storage", r.String()).Str("key", k).Msg("ignoring an object in checkpoint storage that the store never writes")
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	local, localFiles, err := s.newestValid()
	if err != nil {
		return err
	}
	downloaded := 0
	for _, id := range ids {
		s.maxID = max(s.maxID, id)
		buf, md, bad, err := s.getMeta(ctx, r, id)
		if err != nil {
			return err
		}
		if md == nil {
			rs.metas[id] = nil
			if id > local { // newer than what is here: LoadLatest says it skipped it
				rs.damaged = append(rs.damaged, Skipped{ID: id, Err: fmt.Errorf("in checkpoint storage %s: %w", r, bad)})
			}
			continue
		}
		rs.metas[id] = files(md)
		if id <= local {
			continue
		}
		if err := s.download(ctx, r, md, rs.objects, localFiles); err != nil {
			return fmt.Errorf("checkpoint storage %s: checkpoint %d: %w", r, id, err)
		}
		if err := s.write(id, buf); err != nil {
			return fmt.Errorf("checkpoint storage %s: checkpoint %d: %w", r, id, err)
		}
		downloaded++
	}
	s.remote = rs
	s.log.Info().Str("storage", r.String()).Int("checkpoints", len(ids)).Int("downloaded", downloaded).
		Uint64("local_newest", uint64(local)).Msg("checkpoint storage attached")
	return nil
}

// newestValid returns the newest local checkpoint whose metadata verifies
// (0: none) and the state files of every local checkpoint that verifies.
func (s *Store) newestValid() (checkpoint.ID, map[string]struct{}, error) {
	ids, err := s.ids()
	if err != nil {
		return 0, nil, err
	}
	var newest checkpoint.ID
	referenced := map[string]struct{}{}
	for _, id := range ids {
		md, _, err := s.load(id)
		if errors.Is(err, ErrCorrupt) {
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		newest = max(newest, id)
		maps.Copy(referenced, files(md))
	}
	return newest, referenced, nil
}

// getMeta reads checkpoint id's metadata from r; a nil md, why (bad), and
// no error when it does not verify, which is logged.
func (s *Store) getMeta(ctx context.Context, r Remote, id checkpoint.ID) (_ []byte, _ *checkpoint.Metadata, bad, err error) {
	rc, err := r.Get(ctx, metaName(id))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint storage %s: get %s: %w", r, metaName(id), err)
	}
	defer rc.Close()
	buf, err := io.ReadAll(io.LimitReader(rc, headerSize+maxBodySize+1))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint storage %s: read %s: %w", r, metaName(id), err)
	}
	md, bad := decode(buf)
	if bad == nil && md.ID != id {
		bad = fmt.Errorf("%w: body holds id %d", ErrCorrupt, md.ID)
	}
	if bad != nil {
		s.log.Warn().Err(bad).Str("storage", r.String()).Uint64("checkpoint", uint64(id)).
			Msg("checkpoint in storage does not verify; it is not restored")
		return nil, nil, bad, nil
	}
	return buf, &md, nil, nil
}

// download copies md's state files from r into the state root, except those
// a valid local checkpoint references (the same immutable files). A file on
// the remote is written to a temp name, synced, renamed into place, and its
// directory synced. A file missing on the remote is left missing: the
// checkpoint then does not verify locally, as it would not have remotely.
func (s *Store) download(ctx context.Context, r Remote, md *checkpoint.Metadata, objects map[string]int64, keep map[string]struct{}) error {
	var todo []string
	for _, f := range slices.Sorted(maps.Keys(files(md))) {
		if _, ok := keep[f]; ok {
			continue
		}
		if _, ok := objects[f]; !ok {
			s.log.Warn().Str("storage", r.String()).Uint64("checkpoint", uint64(md.ID)).Str("file", f).
				Msg("a state file of a checkpoint in storage is missing there")
			continue
		}
		todo = append(todo, f)
	}
	return parallel(todo, func(f string) error { return s.downloadFile(ctx, r, f) })
}

func (s *Store) downloadFile(ctx context.Context, r Remote, f string) error {
	name := s.fs.PathJoin(s.stateRoot, f)
	dir := s.fs.PathDir(name)
	if err := fsutil.MkdirAll(s.fs, dir); err != nil {
		return err
	}
	rc, err := r.Get(ctx, remoteStatePrefix+f)
	if err != nil {
		return fmt.Errorf("get state file %s: %w", f, err)
	}
	defer rc.Close()
	tmp := name + tmpSuffix
	out, err := s.fs.Create(tmp, "checkpoint-state")
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = io.Copy(out, rc)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, name)
	}
	if err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("download state file %s: %w", f, err)
	}
	return fsutil.SyncDir(s.fs, dir)
}

// upload puts md on the remote: each state file it references that the
// remote lacks, then its metadata buf. Called with mu held, by Persist.
func (s *Store) upload(md *checkpoint.Metadata, buf []byte) error {
	rs := s.remote
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	var todo []string
	for f := range files(md) {
		if size, ok := rs.objects[f]; !ok || size != s.stateSize(f) {
			todo = append(todo, f) // missing, or another file of that name
		}
	}
	slices.Sort(todo)
	var mu sync.Mutex
	err := parallel(todo, func(f string) error {
		size, err := s.uploadFile(ctx, rs.r, f)
		if err == nil {
			mu.Lock()
			rs.objects[f] = size
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint storage %s: %w", rs.r, err)
	}
	if err := rs.r.Put(ctx, metaName(md.ID), strings.NewReader(string(buf)), int64(len(buf))); err != nil {
		return fmt.Errorf("checkpoint storage %s: put %s: %w", rs.r, metaName(md.ID), err)
	}
	rs.metas[md.ID] = files(md)
	return nil
}

// stateSize is the size of state file f, -1 if it cannot be read (the
// upload then says why).
func (s *Store) stateSize(f string) int64 {
	st, err := s.fs.Stat(s.fs.PathJoin(s.stateRoot, f))
	if err != nil {
		return -1
	}
	return st.Size()
}

func (s *Store) uploadFile(ctx context.Context, r Remote, f string) (int64, error) {
	name := s.fs.PathJoin(s.stateRoot, f)
	in, err := s.fs.Open(name)
	if err != nil {
		return 0, fmt.Errorf("open state file %s: %w", f, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat state file %s: %w", f, err)
	}
	if err := r.Put(ctx, remoteStatePrefix+f, in, st.Size()); err != nil {
		return 0, fmt.Errorf("put state file %s: %w", f, err)
	}
	return st.Size(), nil
}

// withdraw removes checkpoint id's metadata from the remote after its local
// save failed, best-effort: a running process must not leave behind a
// checkpoint it was told failed (if it stays, it is still a valid one).
func (s *Store) withdraw(id checkpoint.ID) {
	rs := s.remote
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	if err := rs.r.Delete(ctx, metaName(id)); err != nil {
		s.log.Warn().Err(err).Str("storage", rs.r.String()).Uint64("checkpoint", uint64(id)).
			Msg("could not withdraw a failed checkpoint from storage; it stays there, restorable")
		return
	}
	delete(rs.metas, id)
}

// collectRemote applies retention on the remote: it keeps the newest R
// checkpoints whose metadata verifies and deletes every state file none of
// them references (those of dropped checkpoints, and those uploaded for
// saves that failed), then the dropped metadata. While a checkpoint within
// the window does not verify, no state file is deleted (its files are
// unknown). Called with mu held.
func (s *Store) collectRemote() error {
	rs := s.remote
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	ids := slices.Sorted(maps.Keys(rs.metas))
	slices.Reverse(ids)
	var (
		kept       int
		unknown    bool
		dropped    []checkpoint.ID
		referenced = map[string]struct{}{}
	)
	for _, id := range ids {
		fs := rs.metas[id]
		switch {
		case kept >= s.retained:
			dropped = append(dropped, id)
		case fs == nil:
			unknown = true
		default:
			kept++
			maps.Copy(referenced, fs)
		}
	}
	if unknown {
		return nil
	}
	var unreferenced []string
	for f := range rs.objects {
		if _, ok := referenced[f]; !ok {
			unreferenced = append(unreferenced, f)
		}
	}
	slices.Sort(unreferenced)
	var mu sync.Mutex
	err := parallel(unreferenced, func(f string) error {
		if err := rs.r.Delete(ctx, remoteStatePrefix+f); err != nil {
			return fmt.Errorf("delete state file %s: %w", f, err)
		}
		mu.Lock()
		delete(rs.objects, f)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoint storage %s: %w", rs.r, err)
	}
	for _, id := range dropped {
		if err := rs.r.Delete(ctx, metaName(id)); err != nil {
			return fmt.Errorf("checkpoint storage %s: delete %s: %w", rs.r, metaName(id), err)
		}
		delete(rs.metas, id)
	}
	return nil
}

// parallel runs fn for each item, remoteConcurrency at a time, and returns
// the errors joined.
func parallel(items []string, fn func(string) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, remoteConcurrency)
	)
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
