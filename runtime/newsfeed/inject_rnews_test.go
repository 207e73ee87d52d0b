package newsfeed

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestInjectMisalignedBatch injects rnews batches with one length field
// too large and one too small: the articles before the wrong entry are
// stored, the batch is refused from it on with an error that says so,
// nothing cut or run together reaches the spool or the peer, and the
// corrected batch is then accepted.
func TestInjectMisalignedBatch(t *testing.T) {
	for _, d := range []int{+40, -40} {
		s := nntptest.Start(t, nntptest.Options{Hostname: "sink", KeepReceived: true})
		h := startRelay(t, relayConfig(t, t.TempDir(), peerText("p", s, "")), nil)
		a0 := testArticle("<m0@t>", "misc.test", "up!x", 2)
		a1 := testArticle("<m1@t>", "misc.test", "up!x", 2)
		a2 := testArticle("<m2@t>", "misc.test", "up!x", 2)
		batch := proto.AppendRnews(nil, a0)
		wrong := proto.AppendRnews(nil, a1)
		wrong = append([]byte("#! rnews "+strconv.Itoa(len(a1)+d)+"\n"), wrong[bytes.IndexByte(wrong, '\n')+1:]...)
		batch = append(batch, wrong...)
		batch = proto.AppendRnews(batch, a2)
		res, err := h.r.InjectReader(context.Background(), bytes.NewReader(batch))
		if err == nil || !strings.Contains(err.Error(), "article 2 announced as") {
			t.Fatalf("length off by %d: error %v, want the misaligned entry named", d, err)
		}
		if res.Accepted != 1 || res.Rejected != 0 {
			t.Errorf("length off by %d: %s; want only the article before accepted", d, res)
		}
		fixed := proto.AppendRnews(proto.AppendRnews(proto.AppendRnews(nil, a0), a1), a2)
		res, err = h.r.InjectReader(context.Background(), bytes.NewReader(fixed))
		if err != nil {
			t.Fatalf("corrected batch: %v", err)
		}
		if res.Accepted != 2 || res.Refused != 1 {
			t.Errorf("corrected batch: %s; want 2 accepted, 1 refused (stored before)", res)
		}
		h.settle()
		for _, a := range [][]byte{a0, a1, a2} {
			hd, _, _ := proto.ParseHeaders(a)
			id, _ := hd.MessageID()
			got, ok := s.ArticleBytes(id)
			native := bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n"))
			if !ok || !bytes.HasSuffix(native, a[bytes.Index(a, []byte("\n\n")):]) || bytes.Contains(got, []byte("#! rnews")) {
				t.Errorf("length off by %d: sink holds %s as %q", d, id, got)
			}
		}
		h.stop()
	}
}
