package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestServeKill9DirectUnpack: newsget serve is killed with SIGKILL while
// a RAR set's direct unpack has files in its staging folder: nothing of
// the archive is under a final name in the job's folder; restarted, the
// job completes with the archive's files, byte for byte.
func TestServeKill9DirectUnpack(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	big, small := poster.RandomData(31, 400_000), poster.RandomData(32, 30_000)
	ps := postRARSet(t, s, []rartest.Entry{{Name: "big.bin", Data: big}, {Name: "small.txt", Data: small}}, 50_000, 4000, "rel.part%02d.rar", "du-kill")
	dir := t.TempDir()
	dl := filepath.Join(dir, "dl")
	config := filepath.Join(dir, "newsget.toml")
	os.WriteFile(config, []byte(fmt.Sprintf("download_dir = %q\n[serve]\napi_key = %q\nlisten = \"127.0.0.1:0\"\n", dl, serveKey)), 0o644)
	args := []string{"-config", config, "-server", fmt.Sprintf("nntp://%s?connections=2&pipeline=1", s.HostPort())}
	// Slow enough that the kill lands while later volumes download.
	fault := s.AddFault(nntptest.Fault{Cmd: "BODY", Delay: 20 * time.Millisecond})

	sc := startServe(t, args...)
	id := sc.addFile(t, poster.NZB(ps...), "Rel.nzb", "")
	job := filepath.Join(dl, "incomplete", id)
	staged := func() bool {
		files, _ := filepath.Glob(filepath.Join(job, ".newsget-unpack-*", "*"))
		return len(files) > 0
	}
	for deadline := time.Now().Add(time.Minute); !staged(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			sc.kill()
			t.Fatalf("no direct unpack staged a file:\n%s", sc.stderr.String())
		}
	}
	sc.kill()
	for _, n := range []string{"big.bin", "small.txt"} {
		if _, err := os.Lstat(filepath.Join(job, n)); err == nil {
			t.Errorf("%s under its final name after the kill", n)
		}
	}
	if !staged() {
		t.Log("the staging folder was gone by the kill")
	}
	s.RemoveFault(fault)

	sc = startServe(t, args...)
	defer sc.kill()
	var h map[string]any
	for deadline := time.Now().Add(time.Minute); h == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job never finished:\n%s", sc.stderr.String())
		}
		for _, slot := range sc.api(t, "mode", "history")["history"].(map[string]any)["slots"].([]any) {
			if m := slot.(map[string]any); m["nzo_id"] == id {
				h = m
			}
		}
	}
	if h["status"] != "Completed" {
		t.Fatalf("history: %v (%v)", h["status"], h["fail_message"])
	}
	storage := h["storage"].(string)
	for n, want := range map[string][]byte{"big.bin": big, "small.txt": small} {
		got, err := os.ReadFile(filepath.Join(storage, n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (same contents %v)", n, err, bytes.Equal(got, want))
		}
	}
	left, _ := os.ReadDir(storage)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "big.bin small.txt" {
		t.Errorf("job folder holds %v, want the archive's files alone", names)
	}
}
