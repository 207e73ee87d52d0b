package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// TestReportCommand: `newsfeed report` reads the article log named in the
// configuration, as text and as JSON; without article_log it says what to
// set and exits 1.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	os.Mkdir(spool, 0o755)
	conf := filepath.Join(dir, "newsfeed.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("spool = %q\narticle_log = \"news\"\n", spool)), 0o644)
	at := time.Now().UTC().Add(-time.Minute)
	tod := at.Format("15:04:05.000")
	log := fmt.Sprintf("* %s peers=inn1\n%s <a@b> news1 + 100 +\n%s <c@b> news1 - reason=\"No Newsgroups\"\n"+
		"%s * stats peer name=inn1 run=1 offered=1 accepted=1 bytes=100 backlog=7 lat_ms=250 lat_n=1\n"+
		"%s * stats peer name=inn2 run=1 offered=1 accepted=1 bytes=100 backlog=1 lat_ms=0 lat_n=0\n",
		at.Format("2006-01-02"), tod, tod, tod, tod)
	os.WriteFile(filepath.Join(spool, "news"), []byte(log), 0o644)

	var out, errb bytes.Buffer
	if rc := Main([]string{"report", "-config", conf, "-json"}, &out, &errb); rc != 0 {
		t.Fatalf("report: exit %d: %s", rc, errb.String())
	}
	var rep newsfeed.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Peers) != 2 || rep.Peers[0].Accepted != 1 || rep.Peers[0].BacklogPeak != 7 || rep.Peers[0].AvgLatency != 0.25 ||
		len(rep.Feeders) != 1 || rep.Feeders[0].Rejected != 1 || len(rep.Reasons) != 1 {
		t.Errorf("report: %+v", rep)
	}
	out.Reset()
	if rc := Main([]string{"report", "-config", conf}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "No Newsgroups") {
		t.Errorf("report text: exit %d:\n%s", rc, out.String())
	}
	if !strings.Contains(out.String(), "\nanswers not in the latency (their arrival is not in the log: before its oldest file, or lost by a killed run): 0\n") {
		t.Errorf("report text without the count of unpaired answers:\n%s", out.String())
	}
	// A peer with no timed answer shows no latency, not 0.
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 11 && f[0] == "inn2" && f[11] != "-" {
			t.Errorf("inn2's average latency without samples: %q, want -", f[11])
		}
	}
	errb.Reset()
	if rc := Main([]string{"report", "-config", conf, "-since", "0"}, &out, &errb); rc != 2 || errb.String() != "newsfeed report: -since: \"0\" is not a duration after 0 (want e.g. \"24h\", \"7d\")\n" {
		t.Errorf("report -since 0: exit %d, %q", rc, errb.String())
	}
	os.WriteFile(conf, []byte(fmt.Sprintf("spool = %q\n", spool)), 0o644)
	errb.Reset()
	if rc := Main([]string{"report", "-config", conf}, &out, &errb); rc != 1 || !strings.HasPrefix(errb.String(), "newsfeed report: no article_log in "+conf+": set article_log") {
		t.Errorf("report without article_log: exit %d, %q", rc, errb.String())
	}
}
