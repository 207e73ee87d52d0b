package testscripts

// httpget, the HTTP command scripts use to look at newsweb:
//
//	httpget [-addr-file FILE] [-status N] [-header NAME] PATH
//
// waits (up to ioLimit) for FILE to hold a host:port (newsweb -addr-file
// writes it once it listens), GETs http://host:port/PATH and prints the
// body to stdout, with the named response header's value first when
// -header is given. It fails unless the status is N (200 by default).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	nntpCommands["httpget"] = cmdHTTPGet
}

func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! httpget (use -status)")
	}
	fs := newFlags(ts, "httpget")
	addrFile := fs.String("addr-file", "", "file holding host:port")
	status := fs.Int("status", http.StatusOK, "expected status")
	header := fs.String("header", "", "response header to print first")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *addrFile == "" {
		ts.Fatalf("usage: httpget -addr-file FILE [-status N] [-header NAME] PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioLimit)
	defer cancel()
	var addr string
	for {
		b, err := os.ReadFile(ts.MkAbs(*addrFile))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case <-ctx.Done():
			ts.Fatalf("httpget: %s holds no address after %v", *addrFile, ioLimit)
		case <-time.After(10 * time.Millisecond):
		}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+fs.Arg(0), nil)
	ts.Check(err)
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	if *header != "" {
		fmt.Fprintf(ts.Stdout(), "%s: %s\n", *header, resp.Header.Get(*header))
	}
	ts.Stdout().Write(body)
	if resp.StatusCode != *status {
		ts.Fatalf("httpget %s: status %d, want %d", fs.Arg(0), resp.StatusCode, *status)
	}
}
