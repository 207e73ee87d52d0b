package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// TestScripts: the category's script (else [serve] script) runs after a
// job with SABnzbd's arguments and SAB_* environment, its output in the
// history (script_log, script_line); for a failed job too (status -1 or
// 1); a non-zero exit shows as Exit(N) and, with script_can_fail, fails
// the job.
func TestScripts(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "calls")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.sh", `echo "$1|$2|$3|$4|$5|$6|$7|$8|$SAB_NZO_ID|$SAB_CAT|$SAB_PP_STATUS|$SAB_FINAL_NAME|$SAB_COMPLETE_DIR" >> `+record+"\necho first line\necho all done\n")
	bad := write("bad.sh", "echo working\necho disk full >&2\nexit 3\n")
	s := nntptest.Start(t, nntptest.Options{})
	good := newPosting("Good.mkv", 41, 20_000, 10_000)
	lost := newPosting("Lost.mkv", 42, 20_000, 10_000)
	serveArticles(t, s, func(p poster.Posting, n int) bool { return p.Name == lost.Name && n == 1 }, good, lost)
	td := startDaemon(t, dir, s, func(c *newsget.Config) {
		c.Serve.Script = ok
		c.Serve.ScriptCanFail = true
		c.Categories = append(c.Categories, newsget.Category{Name: "fails", Script: bad}, newsget.Category{Name: "quiet", Script: "None"})
	})
	defer td.stop()
	for _, tc := range []struct {
		nzb        []byte
		name, cat  string
		status     string
		line, args string // args: what ok.sh recorded ("" when it did not run)
	}{
		{poster.NZB(good), "Good", "tv", "Completed", "all done", "{dir}|Good.nzb|Good||tv||0||{id}|tv|0|Good|{dir}"},
		{poster.NZB(lost), "Lost", "tv", "Failed", "all done", "{dir}|Lost.nzb|Lost||tv||1||{id}|tv|1|Lost|{dir}"},
		{poster.NZB(good), "Good2", "fails", "Failed", "Exit(3): disk full", ""},
		{poster.NZB(good), "Good3", "quiet", "Completed", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(record)
			td.d.SetNoDupes("off")
			id := td.addFile(t, tc.nzb, tc.name+".nzb", tc.cat, "")["nzo_ids"].([]any)[0].(string)
			h := td.waitHistory(t, id)
			if h["status"] != tc.status || h["script_line"] != tc.line {
				t.Fatalf("history: status %v, script_line %q (log %q, fail %v); want %s, %q", h["status"], h["script_line"], h["script_log"], h["fail_message"], tc.status, tc.line)
			}
			got, _ := os.ReadFile(record)
			want := ""
			if tc.args != "" {
				want = strings.NewReplacer("{dir}", h["storage"].(string), "{id}", id).Replace(tc.args) + "\n"
			}
			if string(got) != want {
				t.Errorf("script arguments and environment:\n got %q\nwant %q", got, want)
			}
			if tc.status == "Failed" && tc.cat == "fails" && h["fail_message"] != tc.line {
				t.Errorf("fail_message %q, want the script's line", h["fail_message"])
			}
		})
	}
}

// TestScriptAPIURL: SAB_API_URL names an address a script on this machine
// reaches: the listener's own, loopback for a listener on every address.
func TestScriptAPIURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8085", "http://127.0.0.1:8085/api"},
		{":8085", "http://127.0.0.1:8085/api"},
		{"0.0.0.0:8085", "http://127.0.0.1:8085/api"},
		{"[::]:8085", "http://127.0.0.1:8085/api"},
		{"[::1]:8085", "http://[::1]:8085/api"},
		{"192.0.2.7:9000", "http://192.0.2.7:9000/api"},
	} {
		if got := apiURL(tc.addr); got != tc.want {
			t.Errorf("apiURL(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestForceStartsAtOnce: a Force job added while another downloads starts
// at once: it is finished while the other (paused for it) is still in
// the queue, and the other then completes, resumed where it was.
func TestForceStartsAtOnce(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	big := newPosting("Big.mkv", 51, 400_000, 20_000)
	small := newPosting("Small.mkv", 52, 20_000, 20_000)
	serveArticles(t, s, nil, big, small)
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Rate = 100 << 10 })
	defer td.stop()
	first := td.addFile(t, poster.NZB(big), "Big.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	for td.api(t, "mode", "queue")["queue"].(map[string]any)["status"] != "Downloading" {
		time.Sleep(10 * time.Millisecond)
	}
	forced := td.addFile(t, poster.NZB(small), "Small.nzb", "tv", "2")["nzo_ids"].([]any)[0].(string)
	if h := td.waitHistory(t, forced); h["status"] != "Completed" {
		t.Fatalf("forced job: %v", h)
	}
	q := td.api(t, "mode", "queue", "nzo_ids", first)["queue"].(map[string]any)["slots"].([]any)
	if len(q) != 1 {
		t.Fatalf("the first job finished before the forced one: %v", q)
	}
	if h := td.waitHistory(t, first); h["status"] != "Completed" {
		t.Fatalf("first job: %v", h)
	}
}

// TestServerStatsSurviveRestart: server_stats counts day, week, month and
// total per server, and the counts are the same after a restart.
func TestServerStatsSurviveRestart(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Stats.mkv", 61, 30_000, 10_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()
	td := startDaemon(t, dir, s, nil)
	id := td.addFile(t, poster.NZB(p), "Stats.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	td.waitHistory(t, id)
	before := td.api(t, "mode", "server_stats")
	td.stop()
	td2 := startDaemon(t, dir, s, nil)
	defer td2.stop()
	after := td2.api(t, "mode", "server_stats")
	main := before["servers"].(map[string]any)["main"].(map[string]any)
	if main["total"].(float64) < 30_000 || main["day"] != main["total"] || main["week"] != main["total"] || main["month"] != main["total"] ||
		before["total"] != main["total"] || main["articles_success"] != 3.0 {
		t.Fatalf("server_stats = %v", before)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("server_stats after a restart (-before +after):\n%s", d)
	}
}

// TestConfigEditWinsOverPageSetting: a speed limit, bandwidth_max,
// no_dupes or direct_unpack set from the page or the API lasts across restarts until the
// configuration file's own key changes; then the file's value is in
// effect, and stays so at the next start.
func TestConfigEditWinsOverPageSetting(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	dir := t.TempDir()
	conf := func(rate, max int64, dupes string, direct bool) func(*newsget.Config) {
		return func(c *newsget.Config) {
			c.Rate, c.Serve.BandwidthMax, c.Serve.NoDupes, c.DirectUnpack = tomlconf.Size(rate), tomlconf.Size(max), dupes, &direct
		}
	}
	now := func(td *testDaemon) []any {
		td.d.mu.Lock()
		defer td.d.mu.Unlock()
		return []any{td.d.speedLimit(), td.d.bandwidthMax(), td.d.noDupes(), td.d.directUnpack()}
	}
	td := startDaemon(t, dir, s, conf(1<<20, 10<<20, "tag", true))
	if err := td.d.SetSpeedLimit("2M"); err != nil {
		t.Fatal(err)
	}
	if err := td.d.SetBandwidthMax("20M"); err != nil {
		t.Fatal(err)
	}
	if err := td.d.SetNoDupes("pause"); err != nil {
		t.Fatal(err)
	}
	if err := td.d.SetDirectUnpack("0"); err != nil {
		t.Fatal(err)
	}
	td.stop()
	for _, tc := range []struct {
		rate, max int64
		dupes     string
		direct    bool
		want      []any
	}{
		{1 << 20, 10 << 20, "tag", true, []any{int64(2 << 20), int64(20 << 20), "pause", false}}, // file unchanged: the page's settings
		{3 << 20, 10 << 20, "tag", true, []any{int64(3 << 20), int64(20 << 20), "pause", false}}, // rate edited
		{1 << 20, 10 << 20, "tag", true, []any{int64(1 << 20), int64(20 << 20), "pause", false}}, // and again: the file's
		{1 << 20, 30 << 20, "off", true, []any{int64(1 << 20), int64(30 << 20), "off", false}},
		{1 << 20, 30 << 20, "off", false, []any{int64(1 << 20), int64(30 << 20), "off", false}}, // direct_unpack edited
		{1 << 20, 30 << 20, "off", true, []any{int64(1 << 20), int64(30 << 20), "off", true}},   // and again: the file's
	} {
		td := startDaemon(t, dir, s, conf(tc.rate, tc.max, tc.dupes, tc.direct))
		got := now(td)
		td.stop()
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("rate %d, bandwidth_max %d, no_dupes %s, direct_unpack %v in the file: settings (-want +got):\n%s", tc.rate, tc.max, tc.dupes, tc.direct, d)
		}
	}
}
