package cluster

import (
	"bytes"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// spoolFormWant is the wire form as the node made it before
// appendSpoolForm: the whole article with our Path, then proto.AppendWire.
func spoolFormWant(data []byte, h proto.Header, pathHost string) ([]byte, error) {
	if pathHost != "" {
		withPath, err := proto.PrependPathIdentity(nil, data, h, pathHost)
		if err != nil {
			return nil, err
		}
		data = withPath
	}
	return proto.AppendWire(nil, data), nil
}

// checkSpoolForm compares appendSpoolForm of article with spoolFormWant,
// appending after a prefix already in dst and with a dirty scratch buffer.
func checkSpoolForm(t *testing.T, article []byte, pathHost string) {
	t.Helper()
	h, body, err := proto.ParseHeaders(article)
	if err != nil {
		return // the ingest machine does not pass it on
	}
	want, wantErr := spoolFormWant(article, h, pathHost)
	prefix := []byte("prefix")
	got, scratch, err := appendSpoolForm(append([]byte(nil), prefix...), []byte("dirty scratch"), article, h, body, pathHost)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q with %q: error %v, want %v", article, pathHost, err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%q with %q:\n got %q\nwant %q", article, pathHost, got, append(prefix, want...))
	}
	// The scratch buffer it returns is reusable: the same article again.
	again, _, err := appendSpoolForm(nil, scratch, article, h, body, pathHost)
	if err != nil || !bytes.Equal(again, want) {
		t.Fatalf("%q with %q, scratch reused: %q, %v; want %q", article, pathHost, again, err, want)
	}
}

// spoolFormSeeds are articles whose wire form takes each way: CRLF only
// (header and body stuffed one after the other), bare LFs (in the header,
// in the body: the long way), dots at line starts on both sides of the
// split, no body, a Path field with no space, none at all.
var spoolFormSeeds = []string{
	"Path: a!b\r\nMessage-ID: <1@x>\r\n\r\nbody\r\n.dot\r\n",
	"Path: a!b\r\nMessage-ID: <1@x>\r\n\r\n.\r\n..\r\nlast line without end",
	"Path: a!b\r\nMessage-ID: <1@x>\r\n\r\nbare\nLF in the body\r\n",
	"Path: a!b\nMessage-ID: <1@x>\n\nnative\nform\n",
	"Path: a!b\r\nMessage-ID: <1@x>\r\n\r\n",
	"Path: a!b\r\nMessage-ID: <1@x>\r\n",
	"Path:a!b\r\nMessage-ID: <1@x>\r\n\r\nbody\r\n",
	"Path: \t a!b\r\nMessage-ID: <1@x>\r\n\r\n\r\n\r\n",
	"Message-ID: <1@x>\r\n\r\nno Path\r\n",
	"Path: a!b\r\nX-Folded: one\r\n two\r\n\r\nbody\r\n",
	"Path: a!b\r\nMessage-ID: <1@x>\r\n\r\nCR alone\r in the body\r\n",
}

// TestAppendSpoolForm: the wire form made with one copy of the body is
// byte for byte what AppendWire of the whole article with our Path made,
// with path_host set (and a bad one) and without.
func TestAppendSpoolForm(t *testing.T) {
	for _, a := range spoolFormSeeds {
		for _, host := range []string{"feed.example", "", "bad identity"} {
			checkSpoolForm(t, []byte(a), host)
		}
	}
}
