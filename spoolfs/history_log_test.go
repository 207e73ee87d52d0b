package spoolfs

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testHistRecords() [][]byte {
	return [][]byte{
		appendHistRecord(nil, kindArticle, "<a@x>", Token{Seg: 1, Off: 48, Len: 300}, 1),
		appendHistRecord(nil, kindReject, "<spam@x>", Token{}, 2),
		appendCheckpoint(nil, Position{Seg: 2, Off: 4096}, 3),
		appendHistRecord(nil, kindArticle, "<b@x>", Token{Seg: 2, Off: 4096, Len: 9}, 4),
		appendHistRecord(nil, kindForget, "<a@x>", Token{}, 0),
	}
}

func TestHistRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		rec  histRecord
	}{
		{"stored", histRecord{kind: kindArticle, msgid: []byte("<a@x>"), tok: Token{Seg: 3, Off: 1 << 33, Len: 7}, when: 1700000000123456789}},
		{"rejected", histRecord{kind: kindReject, msgid: []byte("<b@x>"), when: -1}},
		{"forget", histRecord{kind: kindForget, msgid: []byte("<c@x>")}},
		{"checkpoint", histRecord{kind: kindCkpt, msgid: []byte{}, tok: Token{Seg: 9, Off: 123}, when: 5}},
		{"longest id", histRecord{kind: kindArticle, msgid: append(append([]byte("<"), bytes.Repeat([]byte("x"), 248)...), '>'), tok: Token{Seg: 1, Off: 48, Len: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := appendHistRecord(nil, tc.rec.kind, string(tc.rec.msgid), tc.rec.tok, tc.rec.when)
			n, _, ok := parseHistRecord(b)
			if !ok || n != len(b) {
				t.Fatalf("parseHistRecord = %d, %v; want %d, true", n, ok, len(b))
			}
			got := decodeHistRecord(b)
			if diff := cmp.Diff(tc.rec, got, cmp.AllowUnexported(histRecord{})); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
			for i := range b { // every single-bit flip is detected
				c := bytes.Clone(b)
				c[i] ^= 0x10
				if _, _, ok := parseHistRecord(c); ok {
					t.Fatalf("flipping bit 4 of byte %d went unnoticed", i)
				}
			}
		})
	}
}

// FuzzHistoryReplay: the history log scanner has the same properties as the
// spool's: junk never hides valid records around it, and small windows agree
// with the slow reference.
func FuzzHistoryReplay(f *testing.F) {
	recs := testHistRecords()
	f.Add([]byte{}, uint16(1))
	f.Add(make([]byte, 64), uint16(5))
	f.Add(recs[0][:20], uint16(17))
	f.Add([]byte("NHNHNH"), uint16(2))
	f.Add(append([]byte("NHA\x05"), make([]byte, 40)...), uint16(9))
	f.Add(append([]byte("NHF\x05"), make([]byte, 40)...), uint16(9))
	f.Fuzz(func(t *testing.T, junk []byte, chunk uint16) {
		checkScan(t, recs[:2], [][]byte{junk}, recs[2:], histRecMagic, parseHistRecord, 1+int(chunk%4096))
		checkScan(t, recs[:3], [][]byte{junk}, nil, histRecMagic, parseHistRecord, 1+int(chunk%256))
	})
}
