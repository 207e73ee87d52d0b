package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestNoUsableServerExits2: a download whose servers refuse every
// connection stops once each has failed -connect-tries times in a row,
// exits 2 and names the servers and the error.
func TestNoUsableServerExits2(t *testing.T) {
	addr := refusedAddr(t)
	dir := t.TempDir()
	nzb := filepath.Join(dir, "x.nzb")
	p := poster.Posting{Name: "x.bin", Data: poster.RandomData(1, 2000), PartSize: 1000, Group: "alt.test", IDPrefix: "x"}
	os.WriteFile(nzb, poster.NZB(p), 0o644)
	var out, errOut bytes.Buffer
	code := Main([]string{"-q", "-connect-tries", "1", "-server", "nntp://" + addr + "?name=dead", "-o", filepath.Join(dir, "out"), nzb}, &out, &errOut)
	if code != 2 {
		t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if want := "stopped: no usable server left; dead: 1 failures in a row, never connected (connect " + addr; !strings.Contains(out.String(), want) {
		t.Errorf("stdout does not say %q:\n%s", want, out.String())
	}
	if !strings.Contains(out.String(), "connection refused") {
		t.Errorf("stdout does not give the error:\n%s", out.String())
	}
}

// refusedAddr is a loopback address that refuses connections for the rest of
// the test (nntptest.RefusedPort).
func refusedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", nntptest.RefusedPort(t))
}
