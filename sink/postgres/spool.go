package postgres

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
)

// A spool file keeps the record values of one transaction on local disk
// from their Write until the transaction is committed: each value as a
// uvarint length and the bytes. Sealed (fsynced, with its directory) at
// pre-commit, it is what Commit and Recover write again when the
// database lost the transaction. Its committable records its length,
// record count and CRC-32C, checked when it is read back.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// spoolSeal is what a committable says of its spool file.
type spoolSeal struct {
	Name  string `json:"spool"` // relative to the job's spool dir
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	CRC   uint32 `json:"crc"`
}

type spoolWriter struct {
	fs   vfs.FS
	dir  string
	name string
	f    vfs.File
	w    *bufio.Writer
	seal spoolSeal
	hdr  [binary.MaxVarintLen64]byte
}

func createSpool(fs vfs.FS, dir, name string) (*spoolWriter, error) {
	f, err := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("create spool file: %w", err)
	}
	return &spoolWriter{fs: fs, dir: dir, name: name, f: f, w: bufio.NewWriterSize(f, 1<<20), seal: spoolSeal{Name: name}}, nil
}

func (s *spoolWriter) append(value []byte) error {
	n := binary.PutUvarint(s.hdr[:], uint64(len(value)))
	s.seal.CRC = crc32.Update(crc32.Update(s.seal.CRC, castagnoli, s.hdr[:n]), castagnoli, value)
	s.seal.Rows++
	s.seal.Bytes += int64(n + len(value))
	if _, err := s.w.Write(s.hdr[:n]); err != nil {
		return err
	}
	_, err := s.w.Write(value)
	return err
}

// finish makes the file durable (its data, then its directory entry) and
// closes it.
func (s *spoolWriter) finish() (spoolSeal, error) {
	err := s.w.Flush()
	if err == nil {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsutil.SyncDir(s.fs, s.dir)
	}
	if err != nil {
		return spoolSeal{}, fmt.Errorf("spool file %s: %w", s.name, err)
	}
	return s.seal, nil
}

// abandon closes and deletes an unsealed spool file.
func (s *spoolWriter) abandon() {
	_ = s.f.Close()
	_ = s.fs.Remove(s.fs.PathJoin(s.dir, s.name))
}

var errSpoolMissing = errors.New("spool file missing")

// readSpool reads a sealed spool file back, calling fn with each value
// (valid until fn returns), and checks it against its seal.
func readSpool(fs vfs.FS, dir string, seal spoolSeal, fn func(value []byte) error) error {
	f, err := fs.Open(fs.PathJoin(dir, seal.Name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", errSpoolMissing, seal.Name)
		}
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var crc uint32
	var rows, size int64
	var hdr [binary.MaxVarintLen64]byte
	var buf []byte
	for rows < seal.Rows {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("spool file %s: damaged after %d of %d records: %w", seal.Name, rows, seal.Rows, err)
		}
		if n > 1<<30 {
			return fmt.Errorf("spool file %s: damaged after %d records: a %d-byte record", seal.Name, rows, n)
		}
		h := binary.PutUvarint(hdr[:], n)
		buf = append(buf[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("spool file %s: damaged after %d of %d records: %w", seal.Name, rows, seal.Rows, err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, hdr[:h]), castagnoli, buf)
		rows++
		size += int64(h) + int64(n)
		if err := fn(buf); err != nil {
			return err
		}
	}
	if size != seal.Bytes || crc != seal.CRC {
		return fmt.Errorf("spool file %s: damaged: %d bytes crc %08x, want %d bytes crc %08x", seal.Name, size, crc, seal.Bytes, seal.CRC)
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
