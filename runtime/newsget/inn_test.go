package newsget

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// ihave posts the postings' parts to innd with IHAVE (RFC 3977 §6.3.2),
// except those skip names.
func ihave(t *testing.T, addr string, skip func(p poster.Posting, n int) bool, ps ...poster.Posting) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(nc)
	w := bufio.NewWriter(nc)
	expect := func(code string) {
		t.Helper()
		w.Flush()
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, code) {
			t.Fatalf("innd said %q (%v), want %s", line, err, code)
		}
	}
	expect("200")
	for _, p := range ps {
		for n := 1; n <= p.Parts(); n++ {
			if skip != nil && skip(p, n) {
				continue
			}
			fmt.Fprintf(w, "IHAVE %s\r\n", p.MessageID(n))
			expect("335")
			w.Write(dotStuff(p.Article(n)))
			expect("235")
		}
	}
	fmt.Fprintf(w, "QUIT\r\n")
	w.Flush()
}

// dotStuff returns a CRLF article in wire form (RFC 3977 §3.1.1).
func dotStuff(a []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.SplitAfter(a, []byte("\r\n")) {
		if len(line) > 0 && line[0] == '.' {
			b.WriteByte('.')
		}
		b.Write(line)
	}
	b.WriteString(".\r\n")
	return b.Bytes()
}

// TestINN posts yEnc multi-part files to a private INN (one with a part
// never posted) and downloads them with the engine from nnrpd and from
// innd's transit port (which answers "401 MODE-READER" until MODE READER):
// the complete file's sha256 equals the original's, the other is marked
// incomplete with the missing part's exact byte range and every other
// byte right.
func TestINN(t *testing.T) {
	srv := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: testGroup}}}) // skips without INN
	whole := newPosting("whole.bin", 50, 5*4000+123, 4000)
	holed := newPosting("holed.bin", 51, 4*4000, 4000)
	ihave(t, srv.Addr(), func(p poster.Posting, n int) bool { return p.Name == "holed.bin" && n == 3 }, whole, holed)

	for _, via := range []struct{ name, addr string }{{"nnrpd", srv.ReaderAddr()}, {"innd", srv.Addr()}} {
		t.Run(via.name, func(t *testing.T) {
			host, port, _ := net.SplitHostPort(via.addr)
			pn, _ := strconv.Atoi(port)
			r := newRun(t, ServerConfig{Name: via.name, Host: host, Port: pn, Connections: 2, JoinGroup: true})
			sum := r.run(t, poster.NZB(whole, holed))
			want := []string{"holed.bin.part incomplete: missing segment 3 bytes 8000-11999 (4000 bytes)", "whole.bin complete"}
			if diff := cmp.Diff(want, results(sum)); diff != "" {
				t.Fatalf("results (-want +got):\n%s\n%s", diff, r.log.String())
			}
			got, err := os.ReadFile(filepath.Join(r.cfg.DownloadDir, "whole.bin"))
			if err != nil || digest(got) != digest(whole.Data) {
				t.Errorf("whole.bin: sha256 differs from the original (%v)", err)
			}
			part, err := os.ReadFile(filepath.Join(r.cfg.DownloadDir, "holed.bin.part"))
			if err != nil || len(part) != len(holed.Data) ||
				!bytes.Equal(part[:8000], holed.Data[:8000]) || !bytes.Equal(part[12000:], holed.Data[12000:]) {
				t.Errorf("holed.bin.part: bytes outside the missing range differ (%v)", err)
			}
		})
	}
}
