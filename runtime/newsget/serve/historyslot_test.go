package serve

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestHistorySlotFields: a history slot has SABnzbd's fields; those
// newsget knows are filled (pp, url, time_added, downloaded,
// postproc_time, retry, report), the rest are what SABnzbd sends when it
// has no value.
func TestHistorySlotFields(t *testing.T) {
	added := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	one := 1
	for _, tc := range []struct {
		name string
		h    HistoryEntry
		want map[string]any
	}{
		{"completed upload", HistoryEntry{Status: "Completed", Bytes: 1000, Added: added, PostprocTime: 7},
			map[string]any{"pp": "D", "url": nil, "report": "", "retry": false, "time_added": added.Unix(),
				"downloaded": int64(1000), "postproc_time": 7}},
		{"failed, repair only", HistoryEntry{Status: "Failed", PP: &one, Added: added},
			map[string]any{"pp": "R", "url": nil, "report": "", "retry": true, "time_added": added.Unix(),
				"downloaded": int64(0), "postproc_time": 0}},
		{"failed fetch", HistoryEntry{Status: "Failed", URL: "https://joe:pw@indexer.example/get?id=1&apikey=secret", FetchFailed: true},
			map[string]any{"pp": "D", "url": "https://joe:xxxxx@indexer.example/get", "report": "future", "retry": false,
				"time_added": int64(0), "downloaded": int64(0), "postproc_time": 0}},
	} {
		s := historySlot(tc.h)
		got := map[string]any{"pp": s.PP, "url": s.URL, "report": s.Report, "retry": s.Retry, "time_added": s.TimeAdded,
			"downloaded": s.DownloadedBytes, "postproc_time": s.PostprocTime}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
		none := map[string]any{"completeness": s.Completeness, "meta": s.Meta, "series": s.Series, "duplicate_key": s.DuplicateKey,
			"md5sum": s.MD5Sum, "password": s.Password, "url_info": s.URLInfo, "action_line": s.ActionLine, "loaded": s.Loaded, "archive": s.Archive}
		wantNone := map[string]any{"completeness": nil, "meta": nil, "series": nil, "duplicate_key": nil,
			"md5sum": nil, "password": nil, "url_info": "", "action_line": "", "loaded": false, "archive": false}
		if d := cmp.Diff(wantNone, none); d != "" {
			t.Errorf("%s: fields without a value (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestHistorySlotAPI: a job that ran shows SABnzbd's history fields in
// the API, with their types.
func TestHistorySlotAPI(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Fields.mkv", 61, 30_000, 10_000)
	serveArticles(t, s, nil, p)
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	id := td.addFile(t, poster.NZB(p), "Fields.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	h := td.waitHistory(t, id)
	if h["status"] != "Completed" {
		t.Fatalf("history slot %v", h)
	}
	for k, want := range map[string]any{"pp": "D", "url": nil, "report": "", "url_info": "", "completeness": nil, "meta": nil,
		"series": nil, "duplicate_key": nil, "md5sum": nil, "password": nil, "action_line": "", "loaded": false, "retry": false,
		"archive": false, "downloaded": h["bytes"]} {
		if got, ok := h[k]; !ok || !cmp.Equal(got, want) {
			t.Errorf("history %s = %#v (present %v), want %#v", k, got, ok, want)
		}
	}
	added, _ := h["time_added"].(float64)
	if completed, _ := h["completed"].(float64); added <= 0 || added > completed {
		t.Errorf("time_added %v, completed %v: want the time it was added, before it completed", h["time_added"], h["completed"])
	}
	if pp, ok := h["postproc_time"].(float64); !ok || pp < 0 {
		t.Errorf("postproc_time = %#v, want seconds", h["postproc_time"])
	}
}
