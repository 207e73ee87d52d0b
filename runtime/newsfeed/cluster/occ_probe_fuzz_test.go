package cluster

import (
	"crypto/md5"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzOCCBatch: parseOCCBatch never panics, and what it reads it reads
// again the same from appendOCCBatch of it (a body may spell a length in
// more octets than needed, so the bytes themselves may differ).
func FuzzOCCBatch(f *testing.F) {
	f.Add(appendOCCBatch(nil, []occArticle{{ID: "<a@b>", Wire: []byte("Path: x\r\n\r\nbody\r\n")}}))
	f.Add(appendOCCBatch(nil, []occArticle{{ID: "<a@b>", Wire: nil}, {ID: "<c@d>", Wire: []byte("x")}}))
	f.Add([]byte{0x05, '<', 'a', '@', 'b', '>', 0xff}) // an article length cut short
	f.Add([]byte{0x09, '<', 'a'})                      // a message-id length past the end
	f.Add([]byte{0x00, 0x00})                          // empty message-id
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		arts, err := parseOCCBatch(b)
		if err != nil {
			return
		}
		again, err := parseOCCBatch(appendOCCBatch(nil, arts))
		if err != nil {
			t.Fatalf("re-encoded batch: %v", err)
		}
		if len(arts) == 0 {
			arts = nil
		}
		if diff := cmp.Diff(arts, again); diff != "" {
			t.Fatal(diff)
		}
	})
}

// FuzzOCCIDs: parseOCCIDs never panics, and what it reads it reads again
// the same from occIDsHeader of it.
func FuzzOCCIDs(f *testing.F) {
	f.Add(occIDsHeader([][md5.Size]byte{md5.Sum([]byte("<a@b>"))}))
	f.Add(occIDsHeader([][md5.Size]byte{md5.Sum([]byte("<a@b>")), md5.Sum([]byte("<c@d>"))}))
	f.Add("")
	f.Add("AAAA")            // 3 octets: not a whole MD5
	f.Add("A\r\nAAAAAAAAAA") // the decoder skips CR and LF
	f.Fuzz(func(t *testing.T, v string) {
		sums, err := parseOCCIDs(nil, v)
		if err != nil {
			return
		}
		again, err := parseOCCIDs(nil, occIDsHeader(sums))
		if err != nil {
			t.Fatalf("re-encoded header: %v", err)
		}
		if diff := cmp.Diff(sums, again); diff != "" {
			t.Fatal(diff)
		}
	})
}
