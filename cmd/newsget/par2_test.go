package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/newsget/parity"
)

// TestPar2Command: verify says damaged (1), repair rebuilds (0), verify
// then says whole (0).
func TestPar2Command(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("newsflow par2 "), 5000)
	if err := os.WriteFile(filepath.Join(dir, "f.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parity.Create(context.Background(), dir, "f", []string{"f.bin"}, 4096, 4, parity.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.bin"), data[:len(data)-5000], 0o644); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "f.par2")
	for _, step := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"par2", "verify", index}, 1, "repair possible: 3 slices to rebuild, 4 recovery slices"},
		{[]string{"par2", "repair", index}, 0, "repaired: 3 slices rebuilt"},
		{[]string{"par2", "verify", index}, 0, "verified: all files whole"},
		{[]string{"par2", "check", index}, 2, ""},
	} {
		var out, errb bytes.Buffer
		if code := Main(step.args, &out, &errb); code != step.code || !strings.Contains(out.String(), step.want) {
			t.Fatalf("newsget %s: exit %d, want %d; output:\n%s%s", strings.Join(step.args, " "), code, step.code, out.String(), errb.String())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.bin")); !bytes.Equal(got, data) {
		t.Fatal("f.bin not restored")
	}
}
