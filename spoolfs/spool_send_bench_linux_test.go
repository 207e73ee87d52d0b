package spoolfs

import (
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSendArticle compares ways to send 500 KB stored articles over
// loopback TCP with every byte checked against its CRC first: each
// article of a 64 MiB segment in the page cache is sent once per pass, as
// a feed sends a backlog, to a reader that discards it. cpu-ns/op is the
// whole process's CPU time (getrusage) per article: the sender's and the
// receiving side's, which on loopback pays for the kernel's receive path
// and the copy out. The ways:
//
//   - verify+sendfile: Verify (pread in chunks, CRC) then sendfile from
//     the page cache (Section.SendTo): the path of articles over
//     driver.CopyBody.
//   - append+write: AppendArticle (one pread into the buffer, CRC there)
//     then write from the buffer: the path up to driver.CopyBody.
//   - mmap+sendfile, mmap+write: CRC over a read-only mapping of the
//     segment kept across articles, each article's pages mapped in as it
//     is read (as for a mapping kept for a segment's life), then sendfile,
//     or write from the mapping.
//   - fanout4/...: the same article to four sockets, checked once
//     (verify+sendfile), read and checked per socket (append+write), read
//     and checked once and written to all four from the one buffer
//     (append+write4), checked over the mapping and written to all four
//     from it (mmap+write), or read, checked and written to the first and
//     sent from the file to the others (append+write,sendfile: the path
//     up to driver.CopyBody with a driver.BodyCopier).
func BenchmarkSendArticle(b *testing.B) {
	const size = 500_000
	s := openT(b, b.TempDir(), SpoolOptions{SegmentSize: 64 << 20})
	defer s.Close()
	var toks []Token
	for i := range (64<<20)/(size+100) - 1 {
		id := msgID("send", i)
		toks = append(toks, putT(b, s, id, wireArticle(id, size), t0))
	}
	flushT(b, s)
	seg, err := s.acquire(toks[0].Seg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.release(seg)
	st, err := seg.f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	m, err := unix.Mmap(int(seg.f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(m)

	conns := loopbackConns(b, 4)
	buf := make([]byte, 0, 1<<20)
	var scratch []byte
	sendfile := func(tok Token, c *net.TCPConn) {
		sec, err := s.Section(tok)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sec.SendTo(c); err != nil {
			b.Fatal(err)
		}
		sec.Close()
	}
	appendWrite := func(tok Token, c *net.TCPConn) {
		var err error
		if buf, err = s.AppendArticle(buf[:0], tok); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	mapped := func(tok Token) []byte {
		a := m[tok.Off : tok.Off+uint64(tok.Len)]
		h, ok := parseRecordHeader(m[tok.Off-recHeaderSize:])
		if !ok || crc32c(a) != h.crcP {
			b.Fatal("bad record")
		}
		return a
	}
	ways := []struct {
		name string
		send func(tok Token)
	}{
		{"verify+sendfile", func(tok Token) {
			var err error
			if scratch, err = s.Verify(tok, scratch); err != nil {
				b.Fatal(err)
			}
			sendfile(tok, conns[0])
		}},
		{"append+write", func(tok Token) { appendWrite(tok, conns[0]) }},
		{"mmap+sendfile", func(tok Token) { mapped(tok); sendfile(tok, conns[0]) }},
		{"mmap+write", func(tok Token) {
			if _, err := conns[0].Write(mapped(tok)); err != nil {
				b.Fatal(err)
			}
		}},
		{"fanout4/verify+sendfile", func(tok Token) {
			var err error
			if scratch, err = s.Verify(tok, scratch); err != nil {
				b.Fatal(err)
			}
			for _, c := range conns {
				sendfile(tok, c)
			}
		}},
		{"fanout4/append+write", func(tok Token) {
			for _, c := range conns {
				appendWrite(tok, c)
			}
		}},
		{"fanout4/mmap+write", func(tok Token) {
			a := mapped(tok)
			for _, c := range conns {
				if _, err := c.Write(a); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"fanout4/append+write4", func(tok Token) {
			var err error
			if buf, err = s.AppendArticle(buf[:0], tok); err != nil {
				b.Fatal(err)
			}
			for _, c := range conns {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"fanout4/append+write,sendfile", func(tok Token) {
			appendWrite(tok, conns[0])
			for _, c := range conns[1:] {
				sendfile(tok, c)
			}
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(size)
			var cpu int64
			i := 0
			for b.Loop() {
				if i%len(toks) == 0 {
					// A new pass: the mapping's pages go, as if each
					// article were read once for the segment's life.
					b.StopTimer()
					cpu += rusageCPU()
					if err := unix.Madvise(m, unix.MADV_DONTNEED); err != nil {
						b.Fatal(err)
					}
					cpu -= rusageCPU()
					b.StartTimer()
				}
				if i == 0 {
					cpu -= rusageCPU()
				}
				w.send(toks[i%len(toks)])
				i++
			}
			cpu += rusageCPU()
			b.ReportMetric(float64(cpu)/float64(i), "cpu-ns/op")
		})
	}
}

// rusageCPU is the process's CPU time so far, user and system, in ns.
func rusageCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// loopbackConns returns n client connections over loopback, each with a
// reader on the other end that discards what it reads.
func loopbackConns(b *testing.B, n int) []*net.TCPConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	var conns []*net.TCPConn
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		srv, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			buf := make([]byte, 256<<10)
			for {
				if _, err := srv.Read(buf); err != nil {
					return
				}
			}
		}()
		b.Cleanup(func() { c.Close(); srv.Close() })
		conns = append(conns, c.(*net.TCPConn))
	}
	return conns
}
