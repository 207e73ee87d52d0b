package postproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

const serveKey = "0123456789abcdef"

// sevenZipTool is 7zz (or 7z, 7za), or the test is skipped.
func sevenZipTool(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"7zz", "7z", "7za"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("7zz, 7z or 7za (Debian package 7zip) not installed: apt-get install 7zip")
	return ""
}

// serveDaemon is newsget serve with this package's Processor, over an
// HTTP test server; it stops when the test ends.
type serveDaemon struct {
	url string
	log logbuf.Buffer
	cfg *newsget.Config
}

func startServe(t *testing.T, srv *nntptest.Server) *serveDaemon {
	t.Helper()
	return startServeWith(t, srv, nil)
}

// startServeWith is startServe with edit's changes to the configuration.
func startServeWith(t *testing.T, srv *nntptest.Server, edit func(*newsget.Config)) *serveDaemon {
	t.Helper()
	dir := t.TempDir()
	cfg := &newsget.Config{DownloadDir: filepath.Join(dir, "dl"), Servers: []newsget.ServerConfig{
		{Name: "main", Host: "127.0.0.1", Port: srv.Port(), Connections: 2}},
		ArticleTimeout: tomlconf.Duration(5 * time.Second), ConnectTimeout: tomlconf.Duration(5 * time.Second)}
	cfg.Serve.APIKey = serveKey
	if edit != nil {
		edit(cfg)
	}
	for _, check := range []func() error{cfg.Check, cfg.CheckServe, cfg.ResolveDirs} {
		if err := check(); err != nil {
			t.Fatal(err)
		}
	}
	sd := &serveDaemon{cfg: cfg}
	log := slog.New(slog.NewTextHandler(&sd.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pp := NewProcessor(cfg, log)
	pp.Options.Workers = 1
	d, err := serve.New(cfg, serve.Options{Log: log, PostProcess: pp, HoldRecovery: true,
		Engine: newsget.Options{SyncInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	sd.url = hs.URL
	t.Cleanup(func() {
		cancel()
		<-done
		hs.Close()
		if t.Failed() {
			t.Logf("daemon log:\n%s", sd.log.String())
		}
	})
	return sd
}

func (sd *serveDaemon) call(t *testing.T, params url.Values, nzb []byte, filename string) map[string]any {
	t.Helper()
	params.Set("apikey", serveKey)
	params.Set("output", "json")
	var resp *http.Response
	var err error
	if nzb == nil {
		resp, err = http.Get(sd.url + "/api?" + params.Encode())
	} else {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("name", filename)
		fw.Write(nzb)
		mw.Close()
		resp, err = http.Post(sd.url+"/api?"+params.Encode(), mw.FormDataContentType(), &body)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	return m
}

// history waits for job id in the history and returns its slot.
func (sd *serveDaemon) history(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		h := sd.call(t, url.Values{"mode": {"history"}}, nil, "")
		for _, s := range h["history"].(map[string]any)["slots"].([]any) {
			if s.(map[string]any)["nzo_id"] == id {
				return s.(map[string]any)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s never reached the history", id)
	return nil
}

// TestServePassword: a 7z archive in volumes, encrypted (headers too),
// added to newsget serve through the API, is unpacked with the password
// from password=, the NZB's meta, nzbname{{pw}} or the file name{{pw}},
// in that order; the braces never reach the job's name or folder. With no
// password, or a wrong one, the job fails as SABnzbd's ENCRYPTED / name;
// mode=retry with password= then completes it from what is on disk.
func TestServePassword(t *testing.T) {
	sevenZip := sevenZipTool(t)
	work := t.TempDir()
	content := poster.RandomData(11, 30000)
	if err := os.WriteFile(filepath.Join(work, "movie.mkv"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sevenZip, "a", "-mx0", "-v12000b", "-psecret", "-mhe=on", "movie.7z", "movie.mkv")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", sevenZip, err, out)
	}
	vols, _ := filepath.Glob(filepath.Join(work, "movie.7z.*"))
	if len(vols) < 2 {
		t.Fatalf("7z volumes: %v", vols)
	}
	srv := nntptest.Start(t, nntptest.Options{})
	srv.AddGroup(nntptest.Group{Name: testGroup})
	// nzbOf posts the volumes under their own message-ids (each job its
	// own NZB: no duplicate) and returns the NZB with meta password pw.
	nzbOf := func(tag, meta string) []byte {
		var ps []poster.Posting
		for _, v := range vols {
			b, err := os.ReadFile(v)
			if err != nil {
				t.Fatal(err)
			}
			p := poster.Posting{Name: filepath.Base(v), Data: b, PartSize: 5000, Group: testGroup, IDPrefix: tag + filepath.Ext(v)}
			for k := 1; k <= p.Parts(); k++ {
				if err := srv.AddArticle(nntptest.Article{MessageID: p.MessageID(k), Raw: p.Article(k)}); err != nil {
					t.Fatal(err)
				}
			}
			ps = append(ps, p)
		}
		n, err := proto.ParseNZB(bytes.NewReader(poster.NZB(ps...)), proto.NZBLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if meta != "" {
			n.Meta = append(n.Meta, proto.NZBMeta{Type: "password", Value: meta})
		}
		return proto.AppendNZB(nil, n)
	}
	sd := startServe(t, srv)
	for i, tc := range []struct {
		name     string
		meta     string // the NZB's <meta type="password">
		param    string // password=
		nzbname  string
		filename string
		wantName string // the history's name
		wantOK   bool
	}{
		{name: "meta", meta: "secret", filename: "Meta.Movie.nzb", wantName: "Meta.Movie", wantOK: true},
		{name: "password= before meta", meta: "wrong", param: "secret", filename: "Param.Movie.nzb", wantName: "Param.Movie", wantOK: true},
		{name: "file name", filename: "File.Movie{{secret}}.nzb", wantName: "File.Movie", wantOK: true},
		{name: "nzbname", nzbname: "Given.Movie{{secret}}", filename: "x{{wrong}}.nzb", wantName: "Given.Movie", wantOK: true},
		{name: "meta before name", meta: "secret", filename: "Both.Movie{{wrong}}.nzb", wantName: "Both.Movie", wantOK: true},
		{name: "none", filename: "None.Movie.nzb", wantName: "ENCRYPTED / None.Movie"},
		{name: "wrong", meta: "wrong", filename: "Wrong.Movie.nzb", wantName: "ENCRYPTED / Wrong.Movie"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{"mode": {"addfile"}, "nzbname": {tc.nzbname}, "password": {tc.param}}
			got := sd.call(t, v, nzbOf(fmt.Sprintf("j%d", i), tc.meta), tc.filename)
			ids, _ := got["nzo_ids"].([]any)
			if len(ids) != 1 {
				t.Fatalf("addfile = %v", got)
			}
			id := ids[0].(string)
			h := sd.history(t, id)
			if h["name"] != tc.wantName || (h["status"] == "Completed") != tc.wantOK {
				t.Fatalf("history: name %q status %v (%v), want %q ok %v", h["name"], h["status"], h["fail_message"], tc.wantName, tc.wantOK)
			}
			if !tc.wantOK {
				if r := sd.call(t, url.Values{"mode": {"retry"}, "value": {id}, "password": {"secret"}}, nil, ""); r["status"] != true {
					t.Fatalf("retry = %v", r)
				}
				// The history entry leaves with the retry; wait for the new one.
				deadline := time.Now().Add(time.Minute)
				for h["status"] != "Completed" && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					h = sd.history(t, id)
				}
				if h["status"] != "Completed" || h["name"] != tc.wantName[len("ENCRYPTED / "):] {
					t.Fatalf("after retry with the password: %v", h)
				}
			}
			storage := h["storage"].(string)
			if filepath.Base(storage) != h["name"] {
				t.Errorf("folder %s, want it named %s", storage, h["name"])
			}
			got2, err := os.ReadFile(filepath.Join(storage, "movie.mkv"))
			if err != nil || !bytes.Equal(got2, content) {
				t.Errorf("movie.mkv: %v (same contents %v)", err, bytes.Equal(got2, content))
			}
		})
	}
}
