package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCtlUsageSaysWhat: a command ctl does not have, or a peer command
// without its peer, is refused (exit 2) with a line that says what to
// run instead, before the usage.
func TestCtlUsageSaysWhat(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "newsfeed ctl: status is not a control command: run newsfeed status\n"},
		{[]string{"report"}, "newsfeed ctl: report is not a control command: run newsfeed report\n"},
		{[]string{"restart"}, "newsfeed ctl: unknown command \"restart\"\n"},
		{[]string{"pause"}, "newsfeed ctl pause: name the peer\n"},
		{nil, "usage: newsfeed ctl "},
	} {
		var out, errb bytes.Buffer
		rc := Main(append([]string{"ctl"}, tc.args...), &out, &errb)
		if rc != 2 || !strings.HasPrefix(errb.String(), tc.want) || !strings.Contains(errb.String(), "usage: newsfeed ctl ") {
			t.Errorf("ctl %q: exit %d, stderr %q; want 2, starting %q, with the usage", tc.args, rc, errb.String(), tc.want)
		}
	}
}

// TestCtlReloadBadFile: ctl reload with a configuration file that does
// not load says that the relay was not asked and keeps its
// configuration, and what to run.
func TestCtlReloadBadFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "newsfeed.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("spool = %q\nadmin = \"127.0.0.1:1\"\nbogus_key = 1\n", dir)), 0o644)
	var out, errb bytes.Buffer
	rc := Main([]string{"ctl", "-config", conf, "reload"}, &out, &errb)
	want := "newsfeed ctl reload: " + conf + ":3: bogus_key: unknown key\nnot reloaded: the relay was not asked and keeps its configuration; fix the file (newsfeed config -check FILE) and reload again\n"
	if rc != 1 || errb.String() != want {
		t.Errorf("ctl reload of a bad file: exit %d, stderr %q; want 1, %q", rc, errb.String(), want)
	}
}
