package testscripts

// httpget and httppost, the HTTP commands scripts use to look at newsweb
// and drive newsget serve:
//
//	httpget -addr-file FILE [-status N] [-header NAME] [-until REGEXP] PATH
//	httppost -addr-file FILE [-status N] [-file FIELD=NAME]... PATH
//
// Both wait (up to ioLimit) for FILE to hold a host:port (newsweb and
// newsget serve -addr-file write it once they listen). httpget GETs
// http://host:port/PATH and prints the body to stdout, with the named
// response header's value first when -header is given; with -until it
// GETs again (every 20 ms, up to ioLimit) until the body matches REGEXP,
// for a daemon working in the background. httppost POSTs PATH as
// multipart/form-data with each -file's contents in FIELD (the file's
// base name as the part's file name), as the *arr apps post an NZB. Both
// fail unless the status is N (200 by default).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	nntpCommands["httpget"] = cmdHTTPGet
	nntpCommands["httppost"] = cmdHTTPPost
}

// waitAddr waits for the file to hold a host:port and a newline.
func waitAddr(ctx context.Context, ts *testscript.TestScript, cmd, file string) string {
	for {
		b, err := os.ReadFile(ts.MkAbs(file))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		select {
		case <-ctx.Done():
			ts.Fatalf("%s: %s holds no address after %v", cmd, file, ioLimit)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! httpget (use -status)")
	}
	fs := newFlags(ts, "httpget")
	addrFile := fs.String("addr-file", "", "file holding host:port")
	status := fs.Int("status", http.StatusOK, "expected status")
	header := fs.String("header", "", "response header to print first")
	until := fs.String("until", "", "GET again until the body matches this regexp")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *addrFile == "" {
		ts.Fatalf("usage: httpget -addr-file FILE [-status N] [-header NAME] [-until REGEXP] PATH")
	}
	var re *regexp.Regexp
	if *until != "" {
		var err error
		re, err = regexp.Compile(*until)
		ts.Check(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioLimit)
	defer cancel()
	addr := waitAddr(ctx, ts, "httpget", *addrFile)
	for {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+fs.Arg(0), nil)
		ts.Check(err)
		resp, err := http.DefaultClient.Do(req)
		ts.Check(err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Check(err)
		if re != nil && !re.Match(body) && resp.StatusCode == *status {
			select {
			case <-ctx.Done():
				ts.Fatalf("httpget %s: no %q in the body after %v; last:\n%s", fs.Arg(0), *until, ioLimit, body)
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if *header != "" {
			fmt.Fprintf(ts.Stdout(), "%s: %s\n", *header, resp.Header.Get(*header))
		}
		ts.Stdout().Write(body)
		if resp.StatusCode != *status {
			ts.Fatalf("httpget %s: status %d, want %d", fs.Arg(0), resp.StatusCode, *status)
		}
		return
	}
}

func cmdHTTPPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! httppost (use -status)")
	}
	fs := newFlags(ts, "httppost")
	addrFile := fs.String("addr-file", "", "file holding host:port")
	status := fs.Int("status", http.StatusOK, "expected status")
	var files list
	fs.Var(&files, "file", "FIELD=NAME: a file part (repeatable)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *addrFile == "" {
		ts.Fatalf("usage: httppost -addr-file FILE [-status N] [-file FIELD=NAME]... PATH")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range files {
		field, name, ok := strings.Cut(f, "=")
		if !ok {
			ts.Fatalf("httppost: -file %q: want FIELD=NAME", f)
		}
		w, err := mw.CreateFormFile(field, filepath.Base(name))
		ts.Check(err)
		w.Write([]byte(ts.ReadFile(name)))
	}
	ts.Check(mw.Close())
	ctx, cancel := context.WithTimeout(context.Background(), ioLimit)
	defer cancel()
	addr := waitAddr(ctx, ts, "httppost", *addrFile)
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+fs.Arg(0), &body)
	ts.Check(err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	ts.Check(err)
	ts.Stdout().Write(out)
	if resp.StatusCode != *status {
		ts.Fatalf("httppost %s: status %d, want %d", fs.Arg(0), resp.StatusCode, *status)
	}
}
