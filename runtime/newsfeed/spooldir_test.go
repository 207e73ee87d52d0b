package newsfeed

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpoolPathChecked: a configured spool whose parent does not exist
// fails to open and creates nothing; one whose parent exists is made
// (only its last component), with a log line saying so.
func TestSpoolPathChecked(t *testing.T) {
	dir := t.TempDir()
	open := func(spool string) (string, error) {
		var logb bytes.Buffer
		cfg, err := ParseConfig("f.toml", []byte(fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\n", spool)))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logb, nil)), NoConnect: true})
		if err == nil {
			r.Close()
		}
		return logb.String(), err
	}

	deep := filepath.Join(dir, "nonexistent", "dir", "spool")
	if _, err := open(deep); err == nil || !strings.Contains(err.Error(), "parent directory") {
		t.Errorf("spool %s: err = %v, want its missing parent named", deep, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); !os.IsNotExist(err) {
		t.Errorf("a failed start created %s (%v)", filepath.Join(dir, "nonexistent"), err)
	}

	last := filepath.Join(dir, "spool")
	log, err := open(last)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "spool directory created") {
		t.Errorf("no log line for the spool made:\n%s", log)
	}
	if fi, err := os.Stat(last); err != nil || !fi.IsDir() {
		t.Errorf("spool %s not made: %v", last, err)
	}
	if log, err := open(last); err != nil || strings.Contains(log, "created") {
		t.Errorf("reopening: err %v, log %s", err, log)
	}
}
