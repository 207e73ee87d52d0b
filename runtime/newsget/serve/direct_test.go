package serve

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// directOf is get_config's misc.direct_unpack.
func directOf(t *testing.T, td *testDaemon) any {
	t.Helper()
	return td.api(t, "mode", "get_config")["config"].(map[string]any)["misc"].(map[string]any)["direct_unpack"]
}

// TestDirectUnpackSetting: SABnzbd's set_config misc direct_unpack (0 or
// 1) turns direct unpack off and on; its answer and get_config report the
// value now, and it lasts across a restart. Anything but 0 or 1 is
// refused with the values it takes.
func TestDirectUnpackSetting(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	dir := t.TempDir()
	td := startDaemon(t, dir, s, nil)
	if got := directOf(t, td); got != float64(1) {
		t.Fatalf("get_config direct_unpack = %v, want 1 (the default)", got)
	}
	got := td.api(t, "mode", "set_config", "section", "misc", "keyword", "direct_unpack", "value", "0")
	if d := cmp.Diff(jsonOf(t, `{"config":{"misc":{"direct_unpack":0}}}`), got); d != "" {
		t.Errorf("set_config direct_unpack=0 (-want +got):\n%s", d)
	}
	if got := directOf(t, td); got != float64(0) {
		t.Errorf("get_config direct_unpack = %v after set_config 0", got)
	}
	got = td.api(t, "mode", "set_config", "section", "misc", "keyword", "direct_unpack", "value", "yes")
	if got["status"] != false || !strings.Contains(got["error"].(string), "want 1 (on) or 0 (off)") {
		t.Errorf("set_config direct_unpack=yes: %v", got)
	}
	td.stop()
	td = startDaemon(t, dir, s, nil)
	if got := directOf(t, td); got != float64(0) {
		t.Errorf("get_config direct_unpack = %v after a restart, want 0 (set before it)", got)
	}
	td.api(t, "mode", "set_config", "section", "misc", "keyword", "direct_unpack", "value", "1")
	if got := directOf(t, td); got != float64(1) {
		t.Errorf("get_config direct_unpack = %v after set_config 1", got)
	}
	td.stop()
}

// TestDirectUnpackPage: the page shows direct unpack and a button that
// turns it the other way; the form is refused from another site (Host
// 421, Origin 403) or without the page's token, as every form is.
func TestDirectUnpackPage(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	port := td.url[strings.LastIndexByte(td.url, ':')+1:]
	if p := td.pageHTML(t); !strings.Contains(p, `Direct unpack <b id="direct-now">on</b>`) || !strings.Contains(p, `name="value" value="0">Turn off`) {
		t.Fatalf("the page shows no direct unpack on with a Turn off button:\n%s", p)
	}
	post := func(host, origin string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest("POST", td.url+"/action/direct-unpack", strings.NewReader(form.Encode()))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	off := url.Values{"csrf": {td.d.csrf}, "value": {"0"}}
	for _, tc := range []struct {
		host, origin string
		form         url.Values
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, off, http.StatusMisdirectedRequest},
		{"127.0.0.1:" + port, "http://evil.example:" + port, off, http.StatusForbidden},
		{"127.0.0.1:" + port, "null", off, http.StatusForbidden},
		{"127.0.0.1:" + port, "", url.Values{"value": {"0"}}, http.StatusForbidden},
	} {
		if got := post(tc.host, tc.origin, tc.form); got != tc.want {
			t.Errorf("Host %s Origin %q: %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}
	if got := directOf(t, td); got != float64(1) {
		t.Fatalf("a refused form turned direct unpack to %v", got)
	}
	if got := post("127.0.0.1:"+port, "http://127.0.0.1:"+port, off); got != http.StatusSeeOther {
		t.Errorf("the page's own form: %d, want 303", got)
	}
	if got := directOf(t, td); got != float64(0) {
		t.Errorf("get_config direct_unpack = %v after the page's Turn off", got)
	}
	if p := td.pageHTML(t); !strings.Contains(p, `Direct unpack <b id="direct-now">off</b>`) || !strings.Contains(p, `name="value" value="1">Turn on`) {
		t.Errorf("the page after Turn off:\n%s", p)
	}
}

// earlyRecorder is a PostProcessor that records the Direct each job's
// download started with.
type earlyRecorder struct {
	NoPostProcess
	mu     sync.Mutex
	direct []bool
}

func (e *earlyRecorder) StartEarly(_ context.Context, job PostJob) Early {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.direct = append(e.direct, job.Direct != nil && *job.Direct)
	return nil
}

// TestDirectUnpackFollowsSetting: a job whose download starts after the
// setting changed gets the setting's value (PostJob.Direct), whatever the
// configuration file says.
func TestDirectUnpackFollowsSetting(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	ps := []poster.Posting{newPosting("a.bin", 1, 3000, 1000), newPosting("b.bin", 2, 3000, 1000), newPosting("c.bin", 3, 3000, 1000)}
	serveArticles(t, s, nil, ps...)
	rec := &earlyRecorder{}
	off := false
	td := startDaemonWith(t, t.TempDir(), s, func(c *newsget.Config) { c.DirectUnpack = &off },
		func(o *Options) { o.PostProcess = rec })
	defer td.stop()
	for i, v := range []string{"", "1", "0"} {
		if v != "" {
			td.api(t, "mode", "set_config", "section", "misc", "keyword", "direct_unpack", "value", v)
		}
		id := td.addFile(t, poster.NZB(ps[i]), ps[i].Name+".nzb", "", "")["nzo_ids"].([]any)[0].(string)
		td.waitHistory(t, id)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if d := cmp.Diff([]bool{false, true, false}, rec.direct); d != "" {
		t.Errorf("Direct of the jobs started with direct_unpack = false, then set to 1, then 0 (-want +got):\n%s", d)
	}
}
