package main

import (
	"os"
	"path/filepath"
	"testing"
)

func writeLog(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "job.log")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckpointLogsAreParsedForBothContenders: the connector's zerolog line
// and Flink's CheckpointCoordinator line each give one completed checkpoint
// with its duration and size; other lines give none.
func TestCheckpointLogsAreParsedForBothContenders(t *testing.T) {
	c := connectorCheckpoints(writeLog(t, `{"level":"info","time":"2026-11-29T10:00:00Z","duration_ms":12.5,"acked_ms":6,"persist_ms":2.5,"commit_ms":3,"state_bytes":7,"message":"checkpoint completed"}
{"level":"info","message":"job running"}
`))
	if len(c) != 1 || c[0].ms != 12.5 || c[0].stateBytes != 7 || c[0].durableMs != 8.5 || c[0].commitMs != 3 {
		t.Errorf("connector checkpoints %+v, want one of 12.5 ms (8.5 to durable, 3 commit) and 7 bytes", c)
	}
	f := flinkCheckpoints(writeLog(t, "2026-11-29T10:00:00.123Z INFO x Completed checkpoint 5 for job abc (12345 bytes, checkpointDuration=123 ms, finalizationTime=0 ms).\nunrelated\n"))
	if len(f) != 1 || f[0].ms != 123 || f[0].stateBytes != 12345 {
		t.Errorf("flink checkpoints %+v, want one of 123 ms and 12345 bytes", f)
	}
	if got := connectorCheckpoints(filepath.Join(t.TempDir(), "missing.log")); got != nil {
		t.Errorf("a missing log gave %+v", got)
	}
}
