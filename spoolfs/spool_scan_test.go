package spoolfs

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/spoolfs/records"
)

// scanEvent is a record or a corrupt region seen by a scan.
type scanEvent struct {
	Off, Len int64
	Bad      bool
}

// scanAll runs the windowed scanner over b with the given window size.
func scanAll(t *testing.T, b []byte, magic []byte, parse func([]byte) (int, int, bool), chunk int) ([]scanEvent, int64) {
	t.Helper()
	sc := records.NewScanner(bytes.NewReader(b), int64(len(b)), magic, parse)
	sc.UseBuffer(make([]byte, 0, chunk))
	var ev []scanEvent
	end, err := sc.Scan(0, func(off int64, rec []byte) error {
		if _, _, ok := parse(rec); !ok {
			t.Errorf("scanner returned an invalid record at %d", off)
		}
		if !bytes.Equal(rec, b[off:off+int64(len(rec))]) {
			t.Errorf("scanner returned bytes that are not the file's at %d", off)
		}
		ev = append(ev, scanEvent{Off: off, Len: int64(len(rec))})
		return nil
	}, func(off, n int64) {
		ev = append(ev, scanEvent{Off: off, Len: n, Bad: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev, end
}

// referenceScan is the slow reference: it tries every offset, with the whole
// file in memory, instead of searching for the magic through a window.
func referenceScan(b []byte, parse func([]byte) (int, int, bool)) ([]scanEvent, int64) {
	var ev []scanEvent
	end := int64(0)
	for p := 0; p < len(b); {
		if n, _, ok := parse(b[p:]); ok {
			ev = append(ev, scanEvent{Off: int64(p), Len: int64(n)})
			p += n
			end = int64(p)
			continue
		}
		q := p + 1
		for q < len(b) {
			if _, _, ok := parse(b[q:]); ok {
				break
			}
			q++
		}
		if q >= len(b) {
			break
		}
		ev = append(ev, scanEvent{Off: int64(p), Len: int64(q - p), Bad: true})
		p = q
	}
	return ev, end
}

// checkScan asserts the scanner's properties on stream = pre + junk + post,
// where pre and post are valid records: it agrees with the reference for
// small windows, records and corrupt regions tile [0, end) in order, the
// records of pre come first and those of post last.
func checkScan(t *testing.T, pre, junk, post [][]byte, magic []byte, parse func([]byte) (int, int, bool), chunk int) {
	var stream []byte
	var preEv, postEv []scanEvent
	for _, r := range pre {
		preEv = append(preEv, scanEvent{Off: int64(len(stream)), Len: int64(len(r))})
		stream = append(stream, r...)
	}
	for _, j := range junk {
		stream = append(stream, j...)
	}
	for _, r := range post {
		postEv = append(postEv, scanEvent{Off: int64(len(stream)), Len: int64(len(r))})
		stream = append(stream, r...)
	}
	got, end := scanAll(t, stream, magic, parse, chunk)
	want, wantEnd := referenceScan(stream, parse)
	if diff := cmp.Diff(want, got); diff != "" || end != wantEnd {
		t.Fatalf("window %d: scan disagrees with the reference (end %d, want %d) (-want +got):\n%s", chunk, end, wantEnd, diff)
	}
	p := int64(0)
	for _, e := range got {
		if e.Off != p {
			t.Fatalf("event at %d, want %d: records and corrupt regions must tile the file", e.Off, p)
		}
		p += e.Len
	}
	if p != end {
		t.Fatalf("events end at %d, scan says %d", p, end)
	}
	if len(got) < len(preEv)+len(postEv) {
		t.Fatalf("%d events, want at least %d", len(got), len(preEv)+len(postEv))
	}
	if diff := cmp.Diff(preEv, got[:len(preEv)]); diff != "" {
		t.Fatalf("valid records before the junk (-want +got):\n%s", diff)
	}
	if len(postEv) > 0 {
		if diff := cmp.Diff(postEv, got[len(got)-len(postEv):]); diff != "" {
			t.Fatalf("valid records after the junk (-want +got):\n%s", diff)
		}
	}
}

// testRecords returns a few valid spool records of assorted kinds.
func testRecords() [][]byte {
	w := wireArticle("<fuzz@x>", 300)
	return [][]byte{
		appendRecord(nil, kindArticle, "<fuzz@x>", w, 1, crc32c(w)),
		appendRecord(nil, kindReject, "<spam@x>", nil, 2, 0),
		appendRecord(nil, kindArticle, "<dot@x>", []byte(".\r\n"), 3, crc32c([]byte(".\r\n"))),
		appendRecord(nil, kindSeal, "", nil, 4, 0),
	}
}

func TestScanRecords(t *testing.T) {
	recs := testRecords()
	torn := recs[0][:len(recs[0])-3]
	flipped := bytes.Clone(recs[0])
	flipped[100] ^= 1
	tests := []struct {
		name string
		pre  [][]byte
		junk [][]byte
		post [][]byte
	}{
		{"clean", recs[:2], nil, recs[2:]},
		{"torn tail", recs[:3], [][]byte{torn}, nil},
		{"zero-filled tail", recs[:3], [][]byte{make([]byte, 4096)}, nil},
		{"flipped byte mid-file", recs[:1], [][]byte{flipped}, recs[1:]},
		{"magic alone", recs[:1], [][]byte{recMagic}, recs[1:]},
		{"garbage then torn", recs[:2], [][]byte{[]byte("garbage"), torn}, nil},
		{"header claims more than the file", recs[:1], [][]byte{recs[0][:recHeaderSize]}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 64, 1 << 20} {
				checkScan(t, tc.pre, tc.junk, tc.post, recMagic, parseRecord, chunk)
			}
		})
	}
}

// FuzzScanRecords: arbitrary bytes between valid spool records never hide
// the records around them, and the windowed scanner agrees with the slow
// reference at every window size.
func FuzzScanRecords(f *testing.F) {
	recs := testRecords()
	f.Add([]byte{}, uint16(1))
	f.Add(make([]byte, 100), uint16(7))
	f.Add(recs[0][:50], uint16(33))
	f.Add(append(bytes.Clone(recs[1]), recs[0][:40]...), uint16(64))
	f.Add([]byte("NFARNFARNFAR"), uint16(3))
	f.Fuzz(func(t *testing.T, junk []byte, chunk uint16) {
		checkScan(t, recs[:2], [][]byte{junk}, recs[2:], recMagic, parseRecord, 1+int(chunk%4096))
		checkScan(t, recs[:1], [][]byte{junk}, nil, recMagic, parseRecord, 1+int(chunk%512))
	})
}
