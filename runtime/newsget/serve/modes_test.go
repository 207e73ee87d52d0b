package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// subset keeps of got the keys want has, recursively, so that a table
// row names only the fields it is about.
func subset(want, got any) any {
	if ws, ok := want.([]any); ok {
		gs, ok := got.([]any)
		if !ok || len(gs) != len(ws) {
			return got
		}
		out := make([]any, len(gs))
		for i := range gs {
			out[i] = subset(ws[i], gs[i])
		}
		return out
	}
	wm, ok := want.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if !ok || !ok2 {
		return got
	}
	out := map[string]any{}
	for k, wv := range wm {
		if gv, ok := gm[k]; ok {
			out[k] = subset(wv, gv)
		}
	}
	return out
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad want %q: %v", s, err)
	}
	return m
}

// TestAPIModes: SABnzbd's modes as its clients call them, request and
// answer, on a paused queue of three jobs (the answers in SABnzbd's
// shapes and words).
func TestAPIModes(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	dir := t.TempDir()
	watch := filepath.Join(dir, "watch")
	os.MkdirAll(watch, 0o755)
	td := startDaemonWith(t, dir, s, func(c *newsget.Config) {
		c.Serve.WatchDir = watch
		c.Serve.BandwidthMax = 10 << 20
	}, func(o *Options) { o.WatchInterval = 1 << 40 }) // only watched_now scans
	defer td.stop()
	queued := func() string {
		td.d.mu.Lock()
		defer td.d.mu.Unlock()
		return fmt.Sprint(len(td.d.state.Queue))
	}
	td.api(t, "mode", "pause")
	var ids []string
	for i, name := range []string{"Beta.Show", "Alpha.Movie", "Gamma.Show"} {
		p := newPosting(name+".mkv", uint64(100+i), 10_000*(i+1), 10_000)
		serveArticles(t, s, nil, p)
		cat := "tv"
		if strings.Contains(name, "Movie") {
			cat = "movies"
		}
		ids = append(ids, td.addFile(t, poster.NZB(p), name+".nzb", cat, "0")["nzo_ids"].([]any)[0].(string))
	}
	order := func() string {
		var out []string
		for _, sl := range td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any) {
			out = append(out, sl.(map[string]any)["filename"].(string))
		}
		return strings.Join(out, ",")
	}
	os.WriteFile(filepath.Join(watch, "Watched.nzb"), poster.NZB(newPosting("w.bin", 9, 5000, 5000)), 0o644)

	for _, tc := range []struct {
		name   string
		params []string
		want   string       // JSON: the fields of the answer to compare
		after  func() error // a check of the state after it
	}{
		{"auth without a key", []string{"mode", "auth", "apikey", ""}, `{"auth":"apikey"}`, nil},
		{"auth with a wrong key", []string{"mode", "auth", "apikey", "", "key", "nope"}, `{"auth":"badkey"}`, nil},
		{"status", []string{"mode", "status"}, `{"status":{"paused":true}}`, nil},
		{"speedlimit absolute", []string{"mode", "config", "name", "speedlimit", "value", "2M"}, `{"status":true}`, nil},
		{"queue shows it", []string{"mode", "queue"}, `{"queue":{"speedlimit":"20","speedlimit_abs":"2097152"}}`, nil},
		{"speedlimit percent", []string{"mode", "config", "name", "speedlimit", "value", "50"}, `{"status":true}`, nil},
		{"queue shows the percent", []string{"mode", "queue"}, `{"queue":{"speedlimit":"50","speedlimit_abs":"5242880"}}`, nil},
		{"speedlimit bad", []string{"mode", "config", "name", "speedlimit", "value", "fast"}, `{"status":false}`, nil},
		{"set_config bandwidth_max", []string{"mode", "set_config", "section", "misc", "keyword", "bandwidth_max", "value", "20M"},
			`{"config":{"misc":{"bandwidth_max":"20971520"}}}`, nil},
		{"set_config no_dupes", []string{"mode", "set_config", "section", "misc", "keyword", "no_dupes", "value", "2"},
			`{"config":{"misc":{"no_dupes":2}}}`, nil},
		{"get_config switches", []string{"mode", "get_config"},
			`{"config":{"misc":{"enable_tv_sorting":0,"enable_movie_sorting":0,"enable_date_sorting":0,"pre_check":0,"direct_unpack":1}}}`, nil},
		{"set_config unknown", []string{"mode", "set_config", "section", "misc", "keyword", "api_key", "value", "x"},
			`{"status":false,"error":"Config item does not exist"}`, nil},
		{"queue search", []string{"mode", "queue", "search", "show"}, `{"queue":{"noofslots":2,"noofslots_total":3}}`, nil},
		{"queue category", []string{"mode", "queue", "category", "movies"}, `{"queue":{"noofslots":1,"noofslots_total":3}}`, nil},
		{"queue nzo_ids", []string{"mode", "queue", "nzo_ids", ids[0] + "," + ids[2]}, `{"queue":{"noofslots":2,"noofslots_total":3}}`, nil},
		{"queue paged", []string{"mode", "queue", "start", "1", "limit", "1"},
			`{"queue":{"noofslots":3,"noofslots_total":3,"start":1,"limit":1,"finish":2,"slots":[{"index":1}]}}`, nil},
		{"queue unpaged", []string{"mode", "queue"}, `{"queue":{"noofslots":3,"start":0,"limit":0,"finish":0}}`, nil},
		{"sort by name", []string{"mode", "queue", "name", "sort", "sort", "name", "dir", "asc"}, `{"status":true}`,
			func() error { return eq(order(), "Alpha.Movie,Beta.Show,Gamma.Show") }},
		{"sort by size descending", []string{"mode", "queue", "name", "sort", "sort", "size", "dir", "desc"}, `{"status":true}`,
			func() error { return eq(order(), "Gamma.Show,Alpha.Movie,Beta.Show") }},
		{"switch to a position", []string{"mode", "switch", "value", ids[0], "value2", "0"}, `{"result":{"position":0,"priority":0}}`,
			func() error { return eq(order(), "Beta.Show,Gamma.Show,Alpha.Movie") }},
		{"switch before a job", []string{"mode", "switch", "value", ids[1], "value2", ids[2]}, `{"result":{"position":1,"priority":0}}`,
			func() error { return eq(order(), "Beta.Show,Alpha.Movie,Gamma.Show") }},
		{"switch unknown", []string{"mode", "switch", "value", "SABnzbd_nzo_nope", "value2", "0"}, `{"result":{"position":-1}}`, nil},
		{"change_cat", []string{"mode", "change_cat", "value", ids[0], "value2", "movies"}, `{"status":true}`, nil},
		{"queue category after change_cat", []string{"mode", "queue", "cat", "movies"}, `{"queue":{"noofslots":2,"noofslots_total":3}}`, nil},
		{"change_opts", []string{"mode", "change_opts", "value", ids[0], "value2", "1"}, `{"status":true}`, nil},
		{"change_opts bad", []string{"mode", "change_opts", "value", ids[0], "value2", "9"}, `{"status":false,"error":"item does not exist"}`, nil},
		{"rename with password", []string{"mode", "queue", "name", "rename", "value", ids[2], "value2", "Renamed.Show", "value3", "pw"}, `{"status":true}`,
			func() error {
				td.d.mu.Lock()
				defer td.d.mu.Unlock()
				j, _ := td.d.find(ids[2])
				return eq(j.Name+" "+j.Password, "Renamed.Show pw")
			}},
		{"get_files", []string{"mode", "get_files", "value", ids[1]}, `{"files":[{"filename":"Alpha.Movie.mkv","mb":"0.02","mbleft":"0.02","status":"active"}]}`, nil},
		{"get_files no value", []string{"mode", "get_files"}, `{"status":false,"error":"expects one parameter"}`, nil},
		{"warnings", []string{"mode", "warnings"}, `{"warnings":[]}`, nil},
		{"warnings clear", []string{"mode", "warnings", "name", "clear"}, `{"status":true}`, nil},
		{"watched_now", []string{"mode", "watched_now"}, `{"status":true}`,
			func() error { return eq(queued(), "4") }},
		{"rss_now", []string{"mode", "rss_now"}, `{"status":true}`, nil},
		{"history delete all on empty", []string{"mode", "history", "name", "delete", "value", "all"}, `{"status":true}`, nil},
		{"history delete unknown", []string{"mode", "history", "name", "delete", "value", "SABnzbd_nzo_nope"}, `{"status":true}`, nil},
		{"history filters on empty", []string{"mode", "history", "failed_only", "1", "search", "x", "category", "tv", "nzo_ids", "a"},
			`{"history":{"noofslots":0,"slots":[]}}`, nil},
		{"retry_all on empty", []string{"mode", "retry_all"}, `{"status":[]}`, nil},
		{"status delete_orphan unknown", []string{"mode", "status", "name", "delete_orphan", "value", "x"}, `{"status":false}`, nil},
		{"unimplemented", []string{"mode", "addlocalfile", "name", "/etc/passwd"}, `{"status":false,"error":"not implemented"}`, nil},
		{"queue unimplemented name", []string{"mode", "queue", "name", "delete_nzf"}, `{"status":false,"error":"not implemented"}`, nil},
		{"purge with search", []string{"mode", "queue", "name", "purge", "search", "watched"}, `{"status":true}`,
			func() error { return eq(queued(), "3") }},
		{"purge all", []string{"mode", "queue", "name", "purge"}, `{"status":true}`,
			func() error { return eq(queued(), "0") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := jsonOf(t, tc.want)
			var got map[string]any
			if tc.params[1] == "auth" {
				key := ""
				if len(tc.params) > 5 {
					key = tc.params[5]
				}
				got = td.get(t, "/api?mode=auth&key="+key)
			} else {
				got = td.api(t, tc.params...)
			}
			if d := cmp.Diff(want, subset(want, got)); d != "" {
				t.Errorf("answer (-want +got):\n%s\nwhole answer: %v", d, got)
			}
			if tc.after != nil {
				if err := tc.after(); err != nil {
					t.Error(err)
				}
			}
		})
	}

	resp, err := http.Get(td.url + "/api?mode=showlog&apikey=" + testKey)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Disposition") == "" || !strings.Contains(string(b), "job added") || strings.Contains(string(b), testKey) {
		t.Errorf("showlog: %s\n%.300s", resp.Header, b)
	}
}

func eq(got, want string) error {
	if got != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// TestNoDupes: the duplicate rule, per setting, for the same NZB added a
// second time under another name.
func TestNoDupes(t *testing.T) {
	for _, tc := range []struct {
		rule, status, labels, history string
	}{
		{"off", "Queued", "[]", ""},
		{"tag", "Queued", "[DUPLICATE]", ""},
		{"pause", "Paused", "[DUPLICATE]", ""},
		{"fail", "", "", "Failed Duplicate NZB: same NZB content as First"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			s := nntptest.Start(t, nntptest.Options{})
			td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Serve.NoDupes = tc.rule })
			defer td.stop()
			p := newPosting("d.bin", 7, 5000, 5000)
			td.api(t, "mode", "pause")
			td.addFile(t, poster.NZB(p), "First.nzb", "", "")
			id := td.addFile(t, poster.NZB(p), "Second.nzb", "", "")["nzo_ids"].([]any)[0].(string)
			if tc.history != "" {
				h := td.waitHistory(t, id)
				if got := fmt.Sprint(h["status"], " ", h["fail_message"]); got != tc.history {
					t.Errorf("history: %s, want %s", got, tc.history)
				}
				return
			}
			q := td.api(t, "mode", "queue", "nzo_ids", id)["queue"].(map[string]any)["slots"].([]any)[0].(map[string]any)
			status := q["status"]
			if status == "Paused" && tc.status == "Queued" {
				status = "Queued" // the whole queue is paused: only the job's own pause counts here
				td.d.mu.Lock()
				if j, _ := td.d.find(id); j.Paused {
					status = "Paused"
				}
				td.d.mu.Unlock()
			}
			if got := fmt.Sprint(status, " ", q["labels"]); got != tc.status+" "+tc.labels {
				t.Errorf("queue slot: %s, want %s %s", got, tc.status, tc.labels)
			}
		})
	}
}

// TestNoDupesFailedHistory: a job that failed is no duplicate's original
// (an *arr app sends another release of the name after a failure); a
// completed one is.
func TestNoDupesFailedHistory(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.api(t, "mode", "pause")
	td.d.mu.Lock()
	td.d.hist = append(td.d.hist,
		HistoryEntry{ID: "SABnzbd_nzo_failed", Name: "Failed.Show", Status: "Failed", FailMessage: "addurl: refused"},
		HistoryEntry{ID: "SABnzbd_nzo_done", Name: "Done.Show", Status: "Completed"})
	td.d.mu.Unlock()
	for _, tc := range []struct{ name, labels string }{{"Failed.Show", "[]"}, {"Done.Show", "[DUPLICATE]"}} {
		p := newPosting(tc.name+".bin", 8, 5000, 5000)
		id := td.addFile(t, poster.NZB(p), tc.name+".nzb", "", "")["nzo_ids"].([]any)[0].(string)
		q := td.api(t, "mode", "queue", "nzo_ids", id)["queue"].(map[string]any)["slots"].([]any)[0].(map[string]any)
		if got := fmt.Sprint(q["labels"]); got != tc.labels {
			t.Errorf("%s after a history entry of that name: labels %s, want %s", tc.name, got, tc.labels)
		}
	}
}

// TestOrphans: a folder under download_dir/incomplete that no job owns is
// listed in fullstatus's folders and removed by delete_orphan and
// delete_all_orphan; a queued job's folder is never listed.
func TestOrphans(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.api(t, "mode", "pause")
	p := newPosting("o.bin", 8, 5000, 5000)
	id := td.addFile(t, poster.NZB(p), "Owned.nzb", "", "")["nzo_ids"].([]any)[0].(string)
	root := filepath.Join(td.cfg.DownloadDir, "incomplete")
	for _, n := range []string{id, "SABnzbd_nzo_gone1", "SABnzbd_nzo_gone2"} {
		os.MkdirAll(filepath.Join(root, n), 0o755)
	}
	folders := func() string {
		return fmt.Sprint(td.api(t, "mode", "fullstatus")["status"].(map[string]any)["folders"])
	}
	if got := folders(); got != "[SABnzbd_nzo_gone1 SABnzbd_nzo_gone2]" {
		t.Fatalf("folders = %s", got)
	}
	if got := td.api(t, "mode", "status", "name", "delete_orphan", "value", "SABnzbd_nzo_gone1"); got["status"] != true {
		t.Fatalf("delete_orphan = %v", got)
	}
	if got := td.api(t, "mode", "status", "name", "delete_orphan", "value", id); got["status"] != false {
		t.Fatalf("delete_orphan of a queued job's folder = %v", got)
	}
	if got := folders(); got != "[SABnzbd_nzo_gone2]" {
		t.Fatalf("folders = %s", got)
	}
	td.api(t, "mode", "status", "name", "delete_all_orphan")
	if got := folders(); got != "[]" {
		t.Fatalf("folders = %s", got)
	}
	if _, err := os.Stat(filepath.Join(root, id)); err != nil {
		t.Errorf("the queued job's folder: %v", err)
	}
}
