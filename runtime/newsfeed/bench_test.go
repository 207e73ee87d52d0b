package newsfeed

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchSink is a minimal streaming peer for throughput figures: it answers
// CHECK with 238 and TAKETHIS with 239, reading article blocks without
// keeping them, so the relay, not the sink, is what is measured.
type benchSink struct {
	ln       net.Listener
	accepted atomic.Int64
	bytes    atomic.Int64
	wg       sync.WaitGroup
}

func startBenchSink(tb testing.TB) *benchSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &benchSink{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	tb.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *benchSink) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *benchSink) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 256<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	io.WriteString(w, "200 bench sink ready\r\n")
	w.Flush()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "CAPABILITIES":
			io.WriteString(w, "101 caps\r\nVERSION 2\r\nIHAVE\r\nSTREAMING\r\n.\r\n")
		case "MODE":
			io.WriteString(w, "203 streaming ok\r\n")
		case "CHECK":
			fmt.Fprintf(w, "238 %s\r\n", f[1])
		case "TAKETHIS":
			n := 0
			for {
				l, err := r.ReadSlice('\n')
				n += len(l)
				if err == bufio.ErrBufferFull {
					continue
				}
				if err != nil {
					return
				}
				if len(l) == 3 && l[0] == '.' {
					break
				}
			}
			s.accepted.Add(1)
			s.bytes.Add(int64(n))
			fmt.Fprintf(w, "239 %s\r\n", f[1])
		case "QUIT":
			io.WriteString(w, "205 bye\r\n")
			w.Flush()
			return
		default:
			io.WriteString(w, "500 what?\r\n")
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// BenchmarkRelay pushes articles through the whole relay over loopback:
// a TAKETHIS client feeds the ingest listener, the relay stores them
// (group commit) and feeds every peer. One op is one article delivered to
// every peer; art/s and MB/s count articles (and their bytes) ingested.
//
//	go test ./runtime/newsfeed/ -run '^$' -bench Relay -benchtime 20000x   (2 KB)
func BenchmarkRelay(b *testing.B) {
	for _, size := range []int{2 << 10, 500 << 10} {
		for _, peers := range []int{1, 4} {
			b.Run(fmt.Sprintf("size=%dKB/peers=%d", size>>10, peers), func(b *testing.B) {
				benchRelay(b, size, peers)
			})
		}
	}
}

func benchRelay(b *testing.B, size, npeers int) {
	var sinks []*benchSink
	text := ""
	for i := range npeers {
		s := startBenchSink(b)
		sinks = append(sinks, s)
		text += fmt.Sprintf("[[peer]]\nname = \"p%d\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 4\n", i, s.port())
	}
	cfg := relayConfig(b, b.TempDir(), text)
	h := startRelay(b, cfg, nil)

	// One body, many ids.
	line := []byte("0123456789 the quick brown fox jumps over the lazy dog 0123456789 abcdefg\r\n")
	body := bytes.Repeat(line, size/len(line))
	head := func(i int) string {
		return fmt.Sprintf("Path: bench.origin!not-for-mail\r\nFrom: b@bench.invalid\r\nNewsgroups: misc.test\r\nSubject: bench %d\r\nDate: %s\r\nMessage-ID: <bench.%d@bench.invalid>\r\n\r\n",
			i, time.Now().UTC().Format(time.RFC1123Z), i)
	}
	c, err := net.Dial("tcp", h.r.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	br.ReadString('\n')
	io.WriteString(c, "MODE STREAM\r\n")
	br.ReadString('\n')

	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	go func() {
		w := bufio.NewWriterSize(c, 256<<10)
		for i := 0; i < b.N; i++ {
			fmt.Fprintf(w, "TAKETHIS <bench.%d@bench.invalid>\r\n", i)
			w.WriteString(head(i))
			w.Write(body)
			w.WriteString(".\r\n")
		}
		w.Flush()
	}()
	acked := 0
	for acked < b.N {
		l, err := br.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if !strings.HasPrefix(l, "239 ") {
			b.Fatalf("answer %q", l)
		}
		acked++
	}
	for _, s := range sinks {
		for s.accepted.Load() < int64(b.N) {
			time.Sleep(time.Millisecond)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "art/s")
	h.checkStats()
}
