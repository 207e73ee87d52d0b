package nullpeer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/proto"
)

// chunkReader returns its data n bytes per Read, so that every way a
// command or a block can be split across reads is exercised.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// session runs the connection loop over in-memory input read chunk bytes
// at a time and returns what the sink wrote.
func session(s *Sink, input []byte, chunk int) string {
	var out bytes.Buffer
	s.newConn(&chunkReader{data: input, n: chunk}, &out).loop()
	return out.String()
}

func newTestSink(opts Options) *Sink {
	if opts.ReadBuffer == 0 {
		opts.ReadBuffer = 1 << 20
	}
	s := &Sink{opts: opts, gate: make(chan struct{}), open: map[net.Conn]struct{}{}}
	s.Release()
	return s
}

// stuffed is an article as a feeder sends it: CRLF, dot-stuffed and
// terminated (proto.ToWire).
func stuffed(native string) []byte { return proto.ToWire([]byte(native)) }

func TestSession(t *testing.T) {
	art := "Message-ID: <a@x>\n\n..dotted line\n.\nbody\n"
	block := stuffed(art)
	tests := []struct {
		name      string
		opts      Options
		input     string
		want      string
		articles  int64
		bytes     int64
		checks    int64
		recordIDs []string
	}{
		{
			name:  "greeting, capabilities, mode stream and quit",
			input: "CAPABILITIES\r\nMODE STREAM\r\nQUIT\r\n",
			want: "200 newsflow sink ready (transit)\r\n" +
				"101 capability list follows\r\nVERSION 2\r\nIHAVE\r\nSTREAMING\r\n.\r\n" +
				"203 streaming permitted\r\n205 bye\r\n",
		},
		{
			name:     "CHECK then TAKETHIS of a dot-stuffed article",
			opts:     Options{RecordIDs: true},
			input:    "mode stream\r\nCHECK <a@x>\r\nTAKETHIS <a@x>\r\n" + string(block) + "QUIT\r\n",
			want:     "200 newsflow sink ready (transit)\r\n203 streaming permitted\r\n238 <a@x>\r\n239 <a@x>\r\n205 bye\r\n",
			articles: 1, bytes: int64(len(block) - 3), checks: 1,
			recordIDs: []string{"<a@x>"},
		},
		{
			name:     "an empty article ends at once",
			input:    "TAKETHIS <e@x>\r\n.\r\nTAKETHIS <f@x>\r\n" + string(block),
			want:     "200 newsflow sink ready (transit)\r\n239 <e@x>\r\n239 <f@x>\r\n",
			articles: 2, bytes: int64(len(block) - 3),
		},
		{
			name:     "IHAVE",
			input:    "IHAVE <i@x>\r\n" + string(block) + "QUIT\r\n",
			want:     "200 newsflow sink ready (transit)\r\n335 send it\r\n235 <i@x>\r\n205 bye\r\n",
			articles: 1, bytes: int64(len(block) - 3),
		},
		{
			name:  "no streaming: MODE STREAM, CHECK and TAKETHIS are unknown",
			opts:  Options{NoStreaming: true},
			input: "CAPABILITIES\r\nMODE STREAM\r\nCHECK <a@x>\r\nQUIT\r\n",
			want: "200 newsflow sink ready (transit)\r\n" +
				"101 capability list follows\r\nVERSION 2\r\nIHAVE\r\n.\r\n" +
				"500 unknown command\r\n500 unknown command\r\n205 bye\r\n",
		},
		{
			name:  "unknown and malformed commands",
			input: "ARTICLE 1\r\nCHECK\r\nTAKETHIS\r\nQUIT\r\n",
			want:  "200 newsflow sink ready (transit)\r\n500 unknown command\r\n500 unknown command\r\n500 unknown command\r\n205 bye\r\n",
		},
	}
	for _, tc := range tests {
		for _, chunk := range []int{1, 2, 3, 5, 7, 64, 1 << 20} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tc.name, chunk), func(t *testing.T) {
				// A small buffer makes the terminator straddle reads.
				tc.opts.ReadBuffer = 4096
				s := newTestSink(tc.opts)
				got := session(s, []byte(tc.input), chunk)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
				gotCounts := [3]int64{s.Articles(), s.Bytes(), s.Checks()}
				if diff := cmp.Diff([3]int64{tc.articles, tc.bytes, tc.checks}, gotCounts); diff != "" {
					t.Errorf("articles, bytes, checks (-want +got):\n%s", diff)
				}
				if tc.opts.RecordIDs {
					if diff := cmp.Diff(tc.recordIDs, s.IDs()); diff != "" {
						t.Errorf("ids (-want +got):\n%s", diff)
					}
				}
			})
		}
	}
}

// TestLargeArticle: a block far larger than the read buffer is counted
// without the buffer growing.
func TestLargeArticle(t *testing.T) {
	line := strings.Repeat("x", 70) + "\n"
	art := "Message-ID: <big@x>\n\n" + strings.Repeat(line, 20000) + ".leading dot\n"
	block := stuffed(art)
	s := newTestSink(Options{ReadBuffer: 8192})
	input := "TAKETHIS <big@x>\r\n" + string(block) + "TAKETHIS <big2@x>\r\n" + string(block) + "QUIT\r\n"
	got := session(s, []byte(input), 3000)
	want := "200 newsflow sink ready (transit)\r\n239 <big@x>\r\n239 <big2@x>\r\n205 bye\r\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if got, want := s.Bytes(), 2*int64(len(block)-3); got != want {
		t.Errorf("bytes = %d, want %d", got, want)
	}
}

// TestCommandTooLong: a line that does not fit ends the connection rather
// than growing the buffer.
func TestCommandTooLong(t *testing.T) {
	s := newTestSink(Options{ReadBuffer: 8 << 10})
	got := session(s, []byte("CHECK <"+strings.Repeat("a", 10000)+"@x>\r\nQUIT\r\n"), 1<<20)
	if want := "200 newsflow sink ready (transit)\r\n"; got != want {
		t.Errorf("answers = %q, want only the greeting %q", got, want)
	}
}

// TestLoopback runs the sink on a real socket: Hold keeps the greeting
// until Release, several connections count into one total, and Wait
// returns once the target is reached.
func TestLoopback(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	block := stuffed("Message-ID: <a@x>\n\nhello\n")
	const conns, per = 3, 50
	type result struct {
		greeting string
		answers  int
		err      error
	}
	results := make(chan result, conns)
	var ncs []net.Conn
	for range conns {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ncs = append(ncs, nc)
	}
	if err := s.WaitConns(ctx, conns); err != nil {
		t.Fatal(err)
	}
	// Held: nothing has been said yet.
	ncs[0].SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, _ := ncs[0].Read(make([]byte, 1)); n != 0 {
		t.Fatal("greeting sent before Release")
	}
	ncs[0].SetReadDeadline(time.Time{})
	s.Release()
	for i, nc := range ncs {
		go func() {
			var b bytes.Buffer
			for j := range per {
				fmt.Fprintf(&b, "TAKETHIS <%d.%d@x>\r\n", i, j)
				b.Write(block)
			}
			b.WriteString("QUIT\r\n")
			go nc.Write(b.Bytes())
			br := bufio.NewReader(nc)
			var res result
			res.greeting, res.err = br.ReadString('\n')
			for res.err == nil {
				var l string
				l, res.err = br.ReadString('\n')
				if strings.HasPrefix(l, "239 ") {
					res.answers++
				}
			}
			if res.err == io.EOF {
				res.err = nil
			}
			results <- res
		}()
	}
	if err := s.Wait(ctx, conns*per); err != nil {
		t.Fatal(err)
	}
	for range conns {
		r := <-results
		if r.err != nil || r.greeting != "200 newsflow sink ready (transit)\r\n" || r.answers != per {
			t.Errorf("client: greeting %q, %d answers, err %v; want the greeting and %d answers", r.greeting, r.answers, r.err, per)
		}
	}
	if got, want := s.Bytes(), int64(conns*per*(len(block)-3)); got != want {
		t.Errorf("bytes = %d, want %d", got, want)
	}
}

// FuzzSink: for any articles, in wire form from proto.ToWire and split
// into reads of any size, the sink answers 239 for each in order and
// counts exactly their block octets (the reference is the encoder's output
// length minus the terminator).
func FuzzSink(f *testing.F) {
	f.Add([]byte("Message-ID: <a@x>\n\nbody\n"), []byte(".\n..\n"), uint8(1), uint16(64))
	f.Add([]byte(""), []byte("\r\n.\r\n"), uint8(3), uint16(16))
	f.Add([]byte(".\r\n"), []byte("x\r\n.\r"), uint8(7), uint16(5000))
	f.Fuzz(func(t *testing.T, a, b []byte, chunk uint8, bufSize uint16) {
		if chunk == 0 {
			chunk = 1
		}
		arts := [][]byte{a, b, a}
		var input bytes.Buffer
		var want strings.Builder
		want.WriteString("200 newsflow sink ready (transit)\r\n")
		var wantBytes int64
		for i, art := range arts {
			fmt.Fprintf(&input, "TAKETHIS <%d@x>\r\n", i)
			blk := proto.ToWire(art)
			input.Write(blk)
			wantBytes += int64(len(blk) - 3)
			fmt.Fprintf(&want, "239 <%d@x>\r\n", i)
		}
		input.WriteString("QUIT\r\n")
		want.WriteString("205 bye\r\n")
		s := newTestSink(Options{ReadBuffer: 64 + int(bufSize)})
		got := session(s, input.Bytes(), int(chunk))
		if got != want.String() {
			t.Fatalf("answers %q, want %q", got, want.String())
		}
		if s.Articles() != int64(len(arts)) || s.Bytes() != wantBytes {
			t.Fatalf("counted %d articles, %d bytes; want %d, %d", s.Articles(), s.Bytes(), len(arts), wantBytes)
		}
	})
}

// BenchmarkSink measures the connection loop alone (no socket): how fast
// the sink takes a TAKETHIS stream of 2 KB and of 500 KB articles.
//
//	go test ./runtime/testpeer/nullpeer/ -run '^$' -bench Sink
func BenchmarkSink(b *testing.B) {
	for _, tc := range []struct {
		size int
		line string
	}{
		{2000, "The quick brown fox jumps over the lazy dog; newsbench feed test data 01\n"},
		{500000, "The quick brown fox jumps over the lazy dog; newsbench feed test data 01\n"},
		{500000, "Dots. Every. Few. Words. Like yEnc bodies have now and then... 01234567\n"},
	} {
		size, line := tc.size, tc.line
		b.Run(fmt.Sprintf("size=%d/dots=%d", size, strings.Count(line, ".")), func(b *testing.B) {
			art := "Message-ID: <a@x>\n\n" + strings.Repeat(line, size/len(line))
			block := stuffed(art)
			var input bytes.Buffer
			n := max(1, (64<<20)/len(block))
			for i := range n {
				fmt.Fprintf(&input, "TAKETHIS <%d@x>\r\n", i)
				input.Write(block)
			}
			data := input.Bytes()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				s := newTestSink(Options{})
				s.newConn(&chunkReader{data: data, n: 256 << 10}, io.Discard).loop()
				if s.Articles() != int64(n) {
					b.Fatalf("%d articles, want %d", s.Articles(), n)
				}
			}
		})
	}
}

// scanEnd runs blockScan over data handed over chunk bytes at a time
// (plus what the last call left), as the sink's buffer does, and returns
// where the block ended and whether it did.
func scanEnd(b *blockScan, data []byte, chunk int) (int, bool) {
	got, done := 0, false
	for end := 0; end < len(data) && !done; {
		end = min(end+chunk, len(data))
		n, ok := b.next(data[got:end])
		got += n
		done = ok
	}
	return got, done
}

// TestBlockScan: blockScan ends blocks where proto's decoder does, in both
// of its ways (memchr for sparse dots, the decoder for dense ones), for
// every split, and carries the density over to the next block.
func TestBlockScan(t *testing.T) {
	prose := strings.Repeat("Dots. Every. Few. Words... and a line\r\n", 40)
	tests := []struct {
		name      string
		block     string
		wantDense bool // the block ends in the decoder way
	}{
		{"sparse", "Subject: x\r\n\r\nno dots at all\r\n..one stuffed\r\n.\r\n", false},
		{"dense prose", prose + "..stuffed\r\n.\r\n", true},
		{"dense then bare LF end", prose + ".\n", true},
		{"dense with a dot-CR line", prose + ".\rx\r\n.\r\n", true},
		{"empty", ".\r\n", false},
	}
	for _, tc := range tests {
		data := []byte(tc.block + "TAKETHIS <next@x>\r\n")
		d := proto.NewBlockDecoder(1 << 20)
		_, wantN, wantDone, err := d.Decode(nil, data)
		if err != nil || !wantDone {
			t.Fatalf("%s: reference decoder: %v done=%v", tc.name, err, wantDone)
		}
		for _, chunk := range []int{1, 2, 3, 5, 7, 64, 4096} {
			var b blockScan
			b.reset()
			got, done := scanEnd(&b, append([]byte(nil), data...), chunk)
			if !done || got != wantN {
				t.Errorf("%s/chunk=%d: end %d done %v, want %d", tc.name, chunk, got, done, wantN)
			}
			if b.dense != tc.wantDense {
				t.Errorf("%s/chunk=%d: dense = %v, want %v", tc.name, chunk, b.dense, tc.wantDense)
			}
			if want := len(tc.block) - strings.LastIndex(tc.block[:len(tc.block)-1], "\n") - 1; b.termLen != want {
				t.Errorf("%s/chunk=%d: terminator length %d, want %d", tc.name, chunk, b.termLen, want)
			}
			// The next block starts dense at once after a dense one.
			b.reset()
			if n, _ := b.next([]byte("a.b.c\r\n")); tc.wantDense && (!b.dense || n == 0) {
				t.Errorf("%s/chunk=%d: the next block did not start dense", tc.name, chunk)
			}
		}
	}
}

// FuzzBlockScan: on any input, split anywhere, blockScan ends the block
// where proto's BlockDecoder (the reference) does, or agrees that it has
// not ended.
func FuzzBlockScan(f *testing.F) {
	f.Add([]byte("a\r\n.\r\n"), uint8(1))
	f.Add([]byte(".\r\nrest"), uint8(2))
	f.Add([]byte("..x\r\n.\n"), uint8(3))
	f.Add([]byte("x.\r\n.y\r\n.\r"), uint8(5))
	f.Add([]byte("line\n.\r\r\n.\r\n"), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if chunk == 0 {
			chunk = 1
		}
		d := proto.NewBlockDecoder(len(data) + 16)
		_, wantN, wantDone, err := d.Decode(nil, data)
		if err != nil {
			t.Skip("the decoder refuses this input")
		}
		var b blockScan
		b.reset()
		// The decoder way decodes in place: scan a copy.
		got, done := scanEnd(&b, append([]byte(nil), data...), int(chunk))
		if done != wantDone || done && got != wantN {
			t.Fatalf("scan: end %d done %v; decoder: end %d done %v", got, done, wantN, wantDone)
		}
	})
}
