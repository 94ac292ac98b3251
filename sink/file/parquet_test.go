package file

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/parquet-go/parquet-go"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/parquetfile"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// parquetSpan configures Parquet files of the test records' id and pad that
// span checkpoints, with row groups of about rowGroup bytes.
func parquetSpan(rowGroup int) func(*Config) {
	return func(c *Config) {
		span(1 << 20)(c)
		c.Format = FormatParquet
		c.Parquet = filefmt.ParquetConfig{
			Columns: []parquetfile.Column{
				{Name: "id", Type: parquetfile.TypeInt64},
				{Name: "pad", Type: parquetfile.TypeString},
			},
			Compression:  parquetfile.CompressionZstd,
			RowGroupSize: 1 << 20,
		}
		if rowGroup > 0 {
			c.Parquet.RowGroupSize = config.ByteSize(rowGroup)
		}
	}
}

// parquetIDs reads the id column of every visible Parquet file with
// parquet-go's reader, and counts the row groups.
func parquetIDs(t *testing.T, fs vfs.FS) (ids map[int64]int, files, rowGroups int) {
	t.Helper()
	visible, _ := listDir(t, fs)
	ids = map[int64]int{}
	for _, name := range visible {
		b := readFile(t, fs, name)
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s is not a Parquet file: %v", name, err)
		}
		rowGroups += len(f.RowGroups())
		r := parquet.NewReader(f)
		row := make([]parquet.Row, 1)
		for {
			n, err := r.ReadRows(row)
			if n == 1 {
				ids[row[0][0].Int64()]++
			}
			if err != nil {
				break
			}
		}
		files++
	}
	return ids, files, rowGroups
}

func assertParquetExactlyOnce(t *testing.T, fs vfs.FS, from, to int) (files, rowGroups int) {
	t.Helper()
	got, files, rowGroups := parquetIDs(t, fs)
	missing, dup := 0, 0
	for i := from; i < to; i++ {
		switch got[int64(i)] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
		delete(got, int64(i))
	}
	if missing+dup+len(got) > 0 {
		t.Fatalf("Parquet output: %d missing, %d duplicated, %d unexpected of %d ids", missing, dup, len(got), to-from)
	}
	return files, rowGroups
}

// TestParquetFilesSpanCheckpointsAndSurviveACrash: a Parquet file grows a
// row group per checkpoint (and per row_group_size) across many
// checkpoints; a crash after checkpoint 5 cuts it back to what 5 recorded,
// the writer resumes it from 5's row groups, and the end of input writes
// the footer: one file, every id once.
func TestParquetFilesSpanCheckpointsAndSurviveACrash(t *testing.T) {
	crashCases(func(t *testing.T, cfg vfs.CrashCloneCfg) {
		mem := vfs.NewCrashableMem()
		s := newTestFile(t, mem, parquetSpan(0))
		w := newTestWriter(t, s, 0)
		var restored []sink.Committable
		for id := checkpoint.ID(1); id <= 5; id++ {
			writeRange(t, w, int(id-1)*100, int(id)*100)
			restored = preCommit(t, w, id)
			commit(t, s, restored)
			w.Committed(id)
		}
		writeRange(t, w, 500, 700)
		preCommit(t, w, 6)
		writeRange(t, w, 700, 800)

		crashed := mem.CrashClone(cfg)
		s2 := newTestFile(t, crashed, parquetSpan(0))
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		r := newTestWriter(t, s2, 0)
		writeRange(t, r, 500, 800)
		r.(sink.InputEnder).EndInput()
		commit(t, s2, preCommit(t, r, 6))
		files, groups := assertParquetExactlyOnce(t, crashed, 0, 800)
		if files != 1 || groups < 6 {
			t.Fatalf("%d files, %d row groups: want one file with a row group per checkpoint at least", files, groups)
		}
	})(t)
}

// TestParquetOpenFileIsClosedAtRecoverWhenNoWriterGoesOn: after a scale
// down, or a schema change, Recover writes the footer from the recorded
// state and commits the file.
func TestParquetOpenFileIsClosedAtRecoverWhenNoWriterGoesOn(t *testing.T) {
	for _, change := range []string{"scale down", "schema"} {
		t.Run(change, func(t *testing.T) {
			fs := vfs.NewMem()
			s := newTestFile(t, fs, parquetSpan(0))
			w := newTestWriter(t, s, 1)
			writeRange(t, w, 0, 300)
			restored := preCommit(t, w, 1)
			_ = w.Close()
			_ = s.Close()
			s2 := newTestFile(t, fs, func(c *Config) {
				parquetSpan(0)(c)
				if change == "scale down" {
					c.Writers = 1
				} else {
					c.Parquet.Columns = append(c.Parquet.Columns, parquetfile.Column{Name: "x", Type: parquetfile.TypeString, Nullable: true})
				}
			})
			if err := s2.Recover(ctx, restored); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			assertParquetExactlyOnce(t, fs, 0, 300)
			if err := s2.Recover(ctx, restored); err != nil {
				t.Fatalf("Recover again (a crash after the first): %v", err)
			}
			assertParquetExactlyOnce(t, fs, 0, 300)
		})
	}
}

// TestParquetRecordsThatDoNotFitAreBadRecordsAndTheFileGoesOn.
func TestParquetRecordsThatDoNotFitAreBadRecordsAndTheFileGoesOn(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, parquetSpan(0))
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	for _, v := range []string{`{"id":"x","pad":""}`, `[1]`, `{"pad":"no id"}`, ``} {
		if err := w.Write(ctx, &record.Record{Value: []byte(v)}); !errors.Is(err, sink.ErrBadRecord) {
			t.Fatalf("Write(%s) = %v, want ErrBadRecord", v, err)
		}
	}
	writeRange(t, w, 10, 20)
	w.(sink.InputEnder).EndInput()
	commit(t, s, preCommit(t, w, 1))
	assertParquetExactlyOnce(t, fs, 0, 20)
}

func TestParquetConfigMistakesNameTheirKey(t *testing.T) {
	for want, mod := range map[string]func(*Config){
		"sink.parquet.columns":         func(c *Config) { c.Format = FormatParquet },
		"sink.parquet.columns[0].type": func(c *Config) { parquetSpan(0)(c); c.Parquet.Columns[0].Type = "int" },
		"sink.parquet":                 func(c *Config) { parquetSpan(0)(c); c.Format = FormatJSONL },
	} {
		cfg := Config{Path: testDir, Job: "orders"}
		mod(&cfg)
		_, err := New(cfg, vfs.NewMem(), zerolog.Nop())
		if !errors.Is(err, sink.ErrInvalidConfig) || !bytes.Contains([]byte(fmt.Sprint(err)), []byte(want)) {
			t.Errorf("New = %v, want ErrInvalidConfig naming %s", err, want)
		}
	}
}
