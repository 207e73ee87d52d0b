package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

const serveKey = "kill9-0123456789"

// serveChild is "newsget serve" running as a child process.
type serveChild struct {
	cmd    *exec.Cmd
	url    string
	stderr bytes.Buffer
}

var serveURLRE = regexp.MustCompile(`newsget serve: (http://[^/ ]+)/`)

// startServe runs newsget serve with args and waits for its address.
func startServe(t *testing.T, args ...string) *serveChild {
	t.Helper()
	sc := &serveChild{cmd: child(t, append([]string{"serve"}, args...)...)}
	sc.cmd.Stderr = &sc.stderr
	out, err := sc.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	m := serveURLRE.FindStringSubmatch(line)
	if m == nil {
		sc.cmd.Process.Kill()
		sc.cmd.Wait()
		t.Fatalf("newsget serve did not start: %q %v\n%s", line, err, sc.stderr.String())
	}
	go io.Copy(io.Discard, out)
	sc.url = m[1]
	return sc
}

func (sc *serveChild) kill() {
	sc.cmd.Process.Signal(syscall.SIGKILL)
	sc.cmd.Wait()
}

// api calls the child's /api and decodes the JSON answer.
func (sc *serveChild) api(t *testing.T, params ...string) map[string]any {
	t.Helper()
	v := url.Values{"apikey": {serveKey}, "output": {"json"}}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	resp, err := http.Get(sc.url + "/api?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, resp)
}

func decodeJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON (%s): %q", resp.Status, b)
	}
	return m
}

// addFile posts an NZB as Sonarr does (mode=addfile, field "name").
func (sc *serveChild) addFile(t *testing.T, nzb []byte, filename, cat string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("name", filename)
	fw.Write(nzb)
	mw.Close()
	v := url.Values{"mode": {"addfile"}, "cat": {cat}, "apikey": {serveKey}, "output": {"json"}}
	resp, err := http.Post(sc.url+"/api?"+v.Encode(), mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, resp)
	ids, _ := m["nzo_ids"].([]any)
	if m["status"] != true || len(ids) != 1 {
		t.Fatalf("addfile = %v", m)
	}
	return ids[0].(string)
}

// slots lists the queue and the history as "nzo_id name cat status".
func (sc *serveChild) slots(t *testing.T, which string) []string {
	t.Helper()
	var out []string
	for _, s := range sc.api(t, "mode", which)[which].(map[string]any)["slots"].([]any) {
		m := s.(map[string]any)
		name, cat := m["filename"], m["cat"]
		if which == "history" {
			name, cat = m["name"], m["category"]
		}
		out = append(out, fmt.Sprintf("%v %v %v", m["nzo_id"], name, cat))
	}
	return out
}

// report stops the child and describes what it was doing: the queue and
// history API answers, the files under dl and the tail of its log.
func (sc *serveChild) report(t *testing.T, dl string) string {
	t.Helper()
	var b bytes.Buffer
	for _, mode := range []string{"queue", "history"} {
		resp, err := http.Get(sc.url + "/api?" + url.Values{"apikey": {serveKey}, "output": {"json"}, "mode": {mode}}.Encode())
		if err != nil {
			fmt.Fprintf(&b, "mode=%s: %v\n", mode, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&b, "mode=%s: %s\n", mode, body)
	}
	filepath.Walk(dl, func(path string, fi os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dl, path)
			fmt.Fprintf(&b, "%s %s %d\n", fi.Mode(), rel, fi.Size())
			// The engine's per-file info (the size, the claim on the .part).
			if fi.Mode().IsRegular() && filepath.Base(filepath.Dir(filepath.Dir(path))) == "files" {
				data, _ := os.ReadFile(path)
				fmt.Fprintf(&b, "\t%s\n", data)
			}
		}
		return nil
	})
	sc.kill()
	log := sc.stderr.Bytes()
	if len(log) > 8000 {
		log = log[len(log)-8000:]
	}
	fmt.Fprintf(&b, "log tail:\n%s", log)
	return b.String()
}

// TestServeKill9 runs newsget serve as a child process, adds a job through
// the API and kills the daemon with SIGKILL at random moments of the
// download, restarting it each time: the queue and the history are as
// they were, the queue's progress is at least what was recorded done,
// the job completes with the posted bytes, and no segment recorded done
// before a kill is fetched again (the server counts BODY per message-id).
func TestServeKill9(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	mk := func(name string, seed uint64, size int) poster.Posting {
		return poster.Posting{Name: name, Data: poster.RandomData(seed, size), PartSize: 4000,
			Group: "alt.binaries.newsflow", IDPrefix: fmt.Sprintf("serve-kill-%d", seed)}
	}
	early := mk("early.bin", 100, 8000)
	ps := []poster.Posting{mk("s0.bin", 101, 200_000), mk("s1.bin", 102, 120_000)}
	idOf := map[string]string{} // message-id -> "file/segment"
	for fi, p := range append([]poster.Posting{early}, ps...) {
		for n := 1; n <= p.Parts(); n++ {
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				t.Fatal(err)
			}
			if fi > 0 {
				idOf[p.MessageID(n)] = fmt.Sprintf("%d/%d", fi-1, n)
			}
		}
	}
	dir := t.TempDir()
	dl := filepath.Join(dir, "dl")
	config := filepath.Join(dir, "newsget.toml")
	os.WriteFile(config, []byte(fmt.Sprintf("download_dir = %q\n[serve]\napi_key = %q\nlisten = \"127.0.0.1:0\"\n\n[[category]]\nname = \"tv\"\n", dl, serveKey)), 0o644)
	args := []string{"-config", config, "-server", fmt.Sprintf("nntp://%s?connections=3&pipeline=2", s.HostPort())}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A job that finishes before the kills: the history to keep.
	sc := startServe(t, args...)
	first := sc.addFile(t, poster.NZB(early), "Early.nzb", "tv")
	for deadline := time.Now().Add(30 * time.Second); len(sc.slots(t, "history")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			sc.kill()
			t.Fatalf("the first job never finished:\n%s", sc.stderr.String())
		}
	}
	wantHistory := []string{first + " Early tv"}
	// Slow enough that the kills land mid-download.
	s.AddFault(nntptest.Fault{Cmd: "BODY", Delay: 8 * time.Millisecond})
	id := sc.addFile(t, poster.NZB(ps...), "Show.S02E03.nzb", "tv")
	wantQueue := []string{id + " Show.S02E03 tv"}

	rng := rand.New(rand.NewPCG(9, 9))
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	queueDir := filepath.Join(dl, ".newsget", "jobs")
	for round := 0; round < rounds; round++ {
		k := s.Count("BODY") + 6 + rng.IntN(10)
		if err := s.Await(ctx, func() bool { return s.Count("BODY") >= k }); err != nil {
			t.Fatalf("round %d: %d of %d BODY commands: %v\n%s", round, s.Count("BODY"), k, err, sc.report(t, dl))
		}
		sc.kill()
		done := doneSegments(t, queueDir)
		mark := len(s.Commands())
		t.Logf("round %d: killed after %d BODY commands; %d segments recorded done", round, s.Count("BODY"), len(done))
		defer func(done map[string]bool, mark, round int) {
			for _, c := range s.Commands()[mark:] {
				if c.Cmd.Verb == "BODY" && done[idOf[c.Cmd.Args[0]]] {
					t.Errorf("segment %s (%s) recorded done before kill %d was fetched again", idOf[c.Cmd.Args[0]], c.Cmd.Args[0], round)
				}
			}
		}(done, mark, round)

		sc = startServe(t, args...)
		if d := cmp.Diff(wantHistory, sc.slots(t, "history")); d != "" {
			t.Errorf("round %d: history after the restart (-want +got):\n%s", round, d)
		}
		q := sc.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
		if d := cmp.Diff(wantQueue, sc.slots(t, "queue")); d != "" {
			t.Errorf("round %d: queue after the restart (-want +got):\n%s", round, d)
		}
		if len(q) == 1 {
			// Progress: at least the segments recorded done (4000 bytes
			// of data each; the NZB counts article bytes, a bit more).
			mbLeft, _ := strconv.ParseFloat(q[0].(map[string]any)["mbleft"].(string), 64)
			mbAll, _ := strconv.ParseFloat(q[0].(map[string]any)["mb"].(string), 64)
			if atLeast := float64(len(done)*4000) / (1 << 20); mbAll-mbLeft+0.01 < atLeast {
				t.Errorf("round %d: queue shows %.2f of %.2f MB done, but %d segments (%.2f MB) were recorded done", round, mbAll-mbLeft, mbAll, len(done), atLeast)
			}
		}
	}
	defer sc.kill()
	var h []string
	for deadline := time.Now().Add(60 * time.Second); len(h) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job never finished: history %v\n%s", h, sc.report(t, dl))
		}
		h = sc.slots(t, "history")
	}
	if d := cmp.Diff(append([]string{id + " Show.S02E03 tv"}, wantHistory...), h); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if st := sc.api(t, "mode", "history")["history"].(map[string]any)["slots"].([]any)[0].(map[string]any)["status"]; st != "Completed" {
		t.Errorf("status %v", st)
	}
	for _, p := range ps {
		got, err := os.ReadFile(filepath.Join(dl, "complete", "tv", "Show.S02E03", p.Name))
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != sha256.Sum256(p.Data) {
			t.Errorf("%s differs from the posted file", p.Name)
		}
	}
	segs := len(idOf)
	t.Logf("%d BODY commands for %d segments (+%d of the first job) over %d kills", s.Count("BODY"), segs, early.Parts(), rounds)
}
