package serve

import (
	"log/slog"
	"testing"
	"time"
)

// TestRoutineNotWarnings: the engine's lines on a missing article or an
// incomplete file, which a download PAR2 repairs has routinely, stay in
// the log but are not warnings; another warning is.
func TestRoutineNotWarnings(t *testing.T) {
	var l logRing
	for _, msg := range []string{"segment missing", "file incomplete", "a real problem"} {
		l.add("level=WARN msg=\""+msg+"\"", slog.NewRecord(time.Unix(1, 0), slog.LevelWarn, msg, 0))
	}
	if len(l.lines) != 3 {
		t.Errorf("%d log lines, want 3", len(l.lines))
	}
	if len(l.warnings) != 1 || l.warnings[0].Text != "a real problem" {
		t.Errorf("warnings %+v, want only the real problem", l.warnings)
	}
}
