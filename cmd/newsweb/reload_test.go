package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// SIGHUP's reload: a good file is taken and the users file read again
// (logged, with the keys that wait for a restart); a file with a mistake
// is refused with its FILE:LINE and the running configuration and users
// stay.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	os.WriteFile(users, []byte("alice:"+string(h)+"\n"), 0o600)
	conf := filepath.Join(dir, "newsweb.toml")
	text := "search = false\n[[server]]\nurl = \"nntp://news.example\"\n[posting]\nenabled = true\nfrom_domain = \"r.example\"\nusers = \"" + users + "\"\n"
	os.WriteFile(conf, []byte(text), 0o644)
	load := func() (config, error) { return loadConfig(conf) }
	running, err := load()
	if err != nil {
		t.Fatal(err)
	}
	running = running.withDefaults()
	posting, err := running.posting()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	os.WriteFile(users, []byte("alice:"+string(h)+"\nbob:"+string(h)+"\n"), 0o600)
	os.WriteFile(conf, []byte(strings.Replace(text, "search = false", "search = false\nper_page = 20", 1)), 0o644)
	reload(running, load, posting, log)
	if !strings.Contains(logs.String(), `msg="reloaded the configuration"`) || !strings.Contains(logs.String(), "users=2") ||
		!strings.Contains(logs.String(), "restart_needed_for=per_page") {
		t.Errorf("reload of a good file logged:\n%s", logs.String())
	}
	if n, _ := posting.Reload(); n != 2 {
		t.Errorf("users after the reload: %d, want 2", n)
	}

	logs.Reset()
	os.WriteFile(conf, []byte("search = false\nper_pag = 3\n"), 0o644)
	if got := reload(running, load, posting, log); got.Posting.Users != users {
		t.Errorf("a refused file changed the running configuration")
	}
	if !strings.Contains(logs.String(), "reload refused") || !strings.Contains(logs.String(), conf+":2: per_pag: unknown key; did you mean per_page?") {
		t.Errorf("reload of a bad file logged:\n%s", logs.String())
	}

	logs.Reset()
	os.WriteFile(conf, []byte(text), 0o644)
	os.WriteFile(users, []byte("alice:"+string(h)+"\ncarol:md5stuff\n"), 0o600)
	reload(running, load, posting, log)
	if !strings.Contains(logs.String(), "reload refused") || !strings.Contains(logs.String(), "line 2") {
		t.Errorf("reload with a bad users file logged:\n%s", logs.String())
	}
}

// A damaged logouts file does not stop the start: the posting state is
// made and the file is written again without the damage.
func TestPostingDamagedLogouts(t *testing.T) {
	dir := t.TempDir()
	users, logouts := filepath.Join(dir, "users"), filepath.Join(dir, "logouts")
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	os.WriteFile(users, []byte("alice:"+string(h)+"\n"), 0o600)
	os.WriteFile(logouts, []byte("0123\tdamaged\n"), 0o600)
	conf := filepath.Join(dir, "newsweb.toml")
	os.WriteFile(conf, []byte("search = false\n[[server]]\nurl = \"nntp://news.example\"\n[posting]\nenabled = true\n"+
		"from_domain = \"r.example\"\nusers = \""+users+"\"\nlogouts_file = \""+logouts+"\"\n"), 0o644)
	c, err := loadConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.withDefaults().posting(); err != nil || p == nil {
		t.Fatalf("posting with a damaged logouts file: %v", err)
	}
	if b, _ := os.ReadFile(logouts); strings.Contains(string(b), "damaged") || !strings.Contains(string(b), "ended-before\t") {
		t.Errorf("the logouts file after the start: %q; want the cutoff, without the damage", b)
	}
}
