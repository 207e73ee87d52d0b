package spoolfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileDurableMode: the file written has the mode asked for (an
// API key's 0600), also where a crash left its temporary file behind with
// a wider one, and the content is the new one whole.
func TestWriteFileDurableMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api_key")
	if err := os.WriteFile(path+".tmp", []byte("left by a crash"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileDurable(path, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(path); string(b) != "secret" {
		t.Errorf("content %q", b)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}
