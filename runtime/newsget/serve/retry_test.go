package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestRetry: a job fails because an article is missing; once the server
// has it, mode=retry (as Radarr's SabnzbdProxy.RetryDownload calls it)
// puts the job back in the queue under its nzo_id and it completes,
// fetching only the article it lacked. Retrying a completed job, an
// unknown one or a deleted one is refused.
func TestRetry(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	// Four PAR2 blocks: one missing article is not beyond repair, so the
	// job downloads everything else before it fails (no fail-fast).
	p := newPosting("Late.part01.rar", 31, 100_000, 10_000)
	vol := newPosting("Late.vol00+04.par2", 32, 40_000, 10_000)
	serveArticles(t, s, func(q poster.Posting, n int) bool { return q.Name == p.Name && n == 4 }, p, vol)
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	id := td.addFile(t, poster.NZB(vol, p), "Late.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	if h := td.waitHistory(t, id); h["status"] != "Failed" {
		t.Fatalf("history = %v, want Failed", h)
	}

	if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(4), Raw: p.Article(4)}); err != nil {
		t.Fatal(err)
	}
	mark := len(s.Commands())
	got := td.api(t, "mode", "retry", "value", id)
	if got["status"] != true || got["nzo_id"] != id {
		t.Fatalf("retry = %v", got)
	}
	h := td.waitHistory(t, id)
	if h["status"] != "Completed" {
		t.Fatalf("history after retry = %v", h)
	}
	if n := td.api(t, "mode", "history")["history"].(map[string]any)["noofslots"]; n != 1.0 {
		t.Errorf("%v history slots after the retry, want 1", n)
	}
	var fetched []string
	for _, c := range s.Commands()[mark:] {
		if c.Cmd.Verb == "BODY" {
			fetched = append(fetched, c.Cmd.Args[0])
		}
	}
	if len(fetched) != 1 || fetched[0] != p.MessageID(4) {
		t.Errorf("the retry fetched %v, want only %s", fetched, p.MessageID(4))
	}
	data, err := os.ReadFile(filepath.Join(h["storage"].(string), p.Name))
	if err != nil || !bytes.Equal(data, p.Data) {
		t.Errorf("finished file: %v (equal %v)", err, bytes.Equal(data, p.Data))
	}

	for _, tc := range []struct{ value, wantErr string }{
		{id, "only a failed job is retried"},
		{"SABnzbd_nzo_nope", "no such job"},
	} {
		if got := td.api(t, "mode", "retry", "value", tc.value); got["status"] != false || !strings.Contains(got["error"].(string), tc.wantErr) {
			t.Errorf("retry %s = %v, want error %q", tc.value, got, tc.wantErr)
		}
	}
}

// TestPageRetryTakesPassword: on the page, the Retry of a job that failed
// on encrypted archives has a password box (the form's password goes to
// the retry, as mode=retry's password= does); other failed jobs' Retry
// has none.
func TestPageRetryTakesPassword(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.d.mu.Lock()
	td.d.hist = append(td.d.hist,
		HistoryEntry{ID: "SABnzbd_nzo_locked", Name: "Locked", Status: "Failed", FailMessage: "unpack failed", Encrypted: true},
		HistoryEntry{ID: "SABnzbd_nzo_broken", Name: "Broken", Status: "Failed", FailMessage: "repair failed"})
	td.d.mu.Unlock()
	body := td.pageHTML(t)
	row := func(id string) string {
		_, after, _ := strings.Cut(body, `data-id="`+id+`"`)
		before, _, _ := strings.Cut(after, "</tr>")
		return before
	}
	if r := row("SABnzbd_nzo_locked"); !strings.Contains(r, `name="password"`) {
		t.Errorf("the encrypted job's row has no password box:\n%s", r)
	}
	if r := row("SABnzbd_nzo_broken"); strings.Contains(r, `name="password"`) || !strings.Contains(r, "Retry") {
		t.Errorf("the other failed job's row:\n%s", r)
	}
}

// TestStageLog: the history's stage_log shows what post-processing did
// (its Stages), then the failure, then the script's line; the page's
// history shows the stages too.
func TestStageLog(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.d.mu.Lock()
	td.d.hist = append(td.d.hist, HistoryEntry{ID: "SABnzbd_nzo_fixed", Name: "Fixed", Status: "Completed", ScriptLine: "ok",
		Stages: []Stage{{Name: "Repair", Actions: []string{"[a.mkv] Repaired (3 blocks rebuilt)"}}}})
	td.d.mu.Unlock()
	slots := td.api(t, "mode", "history")["history"].(map[string]any)["slots"].([]any)
	got := slots[0].(map[string]any)["stage_log"]
	want := []any{
		map[string]any{"name": "Repair", "actions": []any{"[a.mkv] Repaired (3 blocks rebuilt)"}},
		map[string]any{"name": "Script", "actions": []any{"ok"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stage_log (-want +got):\n%s", d)
	}
	if body := td.pageHTML(t); !strings.Contains(body, "Repair: [a.mkv] Repaired (3 blocks rebuilt)") {
		t.Errorf("the page's history does not say what was repaired:\n%s", body)
	}
}
