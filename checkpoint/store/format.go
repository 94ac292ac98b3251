package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/connector-dev/connector/checkpoint"
)

// Metadata file format, version 1. All integers are big-endian.
//
//	offset  size  field
//	0       8     magic "CONNCKPT"
//	8       2     format version (1)
//	10      4     body length n in bytes
//	14      4     CRC-32C (Castagnoli) of bytes [0, 14) followed by the body
//	18      n     body: checkpoint.Metadata as JSON
//
// The file is exactly 18+n bytes long. A file that is shorter or longer, has
// another magic, an unknown version, a checksum mismatch, a body that is not
// valid JSON, a body whose id differs from the id in the file name, or a
// state file path that is absolute or leaves the state root, is corrupt.
// A new format gets a new version number; readers reject versions they do
// not know rather than guess.
const (
	magic         = "CONNCKPT"
	formatVersion = 1
	headerSize    = 18
	// maxBodySize bounds what a reader allocates for one file.
	maxBodySize = 256 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the file contents for md.
func encode(md checkpoint.Metadata) ([]byte, error) {
	body, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint %d: %w", md.ID, err)
	}
	if len(body) > maxBodySize {
		return nil, fmt.Errorf("%w: checkpoint %d metadata is %d bytes, limit %d",
			ErrInvalid, md.ID, len(body), maxBodySize)
	}
	buf := make([]byte, headerSize+len(body))
	copy(buf, magic)
	binary.BigEndian.PutUint16(buf[8:], formatVersion)
	binary.BigEndian.PutUint32(buf[10:], uint32(len(body)))
	copy(buf[headerSize:], body)
	binary.BigEndian.PutUint32(buf[14:], checksum(buf))
	return buf, nil
}

// checksum covers the header up to the checksum field, then the body.
func checksum(file []byte) uint32 {
	c := crc32.Checksum(file[:14], castagnoli)
	return crc32.Update(c, castagnoli, file[headerSize:])
}

// decode verifies file and returns the metadata it holds. Every failure is
// classed ErrCorrupt.
func decode(file []byte) (checkpoint.Metadata, error) {
	var md checkpoint.Metadata
	if len(file) < headerSize {
		return md, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header",
			ErrCorrupt, len(file), headerSize)
	}
	if string(file[:8]) != magic {
		return md, fmt.Errorf("%w: bad magic %q", ErrCorrupt, file[:8])
	}
	if v := binary.BigEndian.Uint16(file[8:]); v != formatVersion {
		return md, fmt.Errorf("%w: unsupported format version %d (this build reads %d)",
			ErrCorrupt, v, formatVersion)
	}
	n := binary.BigEndian.Uint32(file[10:])
	if n > maxBodySize || int(n) != len(file)-headerSize {
		return md, fmt.Errorf("%w: header says %d body bytes, file has %d (torn write?)",
			ErrCorrupt, n, len(file)-headerSize)
	}
	if want, got := binary.BigEndian.Uint32(file[14:]), checksum(file); want != got {
		return md, fmt.Errorf("%w: checksum mismatch: stored %08x, computed %08x",
			ErrCorrupt, want, got)
	}
	if err := json.Unmarshal(file[headerSize:], &md); err != nil {
		return md, fmt.Errorf("%w: body: %w", ErrCorrupt, err)
	}
	for task, snap := range md.Tasks {
		for _, f := range snap.Files {
			if err := validStatePath(f); err != nil {
				return md, fmt.Errorf("%w: task %s: %w", ErrCorrupt, task, err)
			}
		}
	}
	return md, nil
}
