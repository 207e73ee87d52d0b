package main

import (
	"bytes"
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
