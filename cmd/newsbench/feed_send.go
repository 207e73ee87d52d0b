package main

// Two reference points measured in the same run as the feeders: a trivial
// Go sender (the article set's TAKETHIS stream, built in memory before the
// clock starts, written with writev) into the sink, which is the sink's
// own ceiling; and a plain socket copy of the same bytes into a reader
// that discards them, which is the loopback byte limit of this machine.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// pushResult is what one push of the set reported.
type pushResult struct {
	elapsed  time.Duration
	accepted int   // 239 answers
	bytes    int64 // octets written (commands included)
	refused  []string
}

// pushTakethis sends the whole set to every address in addrs over conns
// connections each (article i goes on connection i mod conns), after
// MODE STREAM, and waits for every answer. The clock starts when every
// connection is ready and stops at the last answer. Answers other than 239
// are collected in refused (the first few).
func pushTakethis(ctx context.Context, addrs []string, set *articleSet, conns int) (pushResult, error) {
	type stream struct {
		nc   net.Conn
		br   *bufio.Reader
		bufs net.Buffers
		n    int
	}
	var streams []*stream
	defer func() {
		for _, s := range streams {
			s.nc.Close()
		}
	}()
	var d net.Dialer
	for _, addr := range addrs {
		for c := range conns {
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return pushResult{}, fmt.Errorf("push: %w", err)
			}
			s := &stream{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), bufs: set.takethisStream(c, conns)}
			s.n = len(s.bufs) / 3
			streams = append(streams, s)
			if deadline, ok := ctx.Deadline(); ok {
				nc.SetDeadline(deadline)
			}
			if l, err := s.br.ReadString('\n'); err != nil || !strings.HasPrefix(l, "200") {
				return pushResult{}, fmt.Errorf("push: %s: greeting %q: %v", addr, strings.TrimSpace(l), err)
			}
			io.WriteString(nc, "MODE STREAM\r\n")
			if l, err := s.br.ReadString('\n'); err != nil || !strings.HasPrefix(l, "203") {
				return pushResult{}, fmt.Errorf("push: %s: MODE STREAM: %q: %v", addr, strings.TrimSpace(l), err)
			}
		}
	}
	var res pushResult
	for _, s := range streams {
		for _, b := range s.bufs {
			res.bytes += int64(len(b))
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	start := time.Now()
	for i, s := range streams {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := s.bufs.WriteTo(s.nc); err != nil {
				errs[i] = fmt.Errorf("push: write: %w", err)
				s.nc.Close()
			}
		}()
		go func() {
			defer wg.Done()
			ok := 0
			for range s.n {
				l, err := s.br.ReadSlice('\n')
				if err != nil {
					if errs[i] == nil {
						errs[i] = fmt.Errorf("push: read answers: %w", err)
					}
					return
				}
				if len(l) > 4 && string(l[:4]) == "239 " {
					ok++
					continue
				}
				mu.Lock()
				if len(res.refused) < 5 {
					res.refused = append(res.refused, strings.TrimSpace(string(l)))
				}
				mu.Unlock()
			}
			mu.Lock()
			res.accepted += ok
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res, errors.Join(errs...)
}

// copyResult is one loopback copy.
type copyResult struct {
	elapsed time.Duration
	bytes   int64
}

// loopbackCopy writes the set's TAKETHIS stream (the same bytes a feeder
// sends, near enough) copies times, each copy spread over conns loopback
// TCP connections, all at once, each into a reader that discards it: the
// most this machine moves over loopback with that many connections.
func loopbackCopy(ctx context.Context, set *articleSet, conns, copies int) (copyResult, error) {
	n := conns * copies
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return copyResult{}, err
	}
	defer ln.Close()
	var total int64
	var senders []net.Conn
	var bufs []net.Buffers
	defer func() {
		for _, c := range senders {
			c.Close()
		}
	}()
	received := make(chan error, n)
	for i := range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return copyResult{}, err
		}
		senders = append(senders, c)
		r, err := ln.Accept()
		if err != nil {
			return copyResult{}, err
		}
		go func() {
			defer r.Close()
			buf := make([]byte, 1<<20)
			for {
				_, err := r.Read(buf)
				if err == io.EOF {
					received <- nil
					return
				}
				if err != nil {
					received <- err
					return
				}
			}
		}()
		b := set.takethisStream(i%conns, conns)
		for _, x := range b {
			total += int64(len(x))
		}
		bufs = append(bufs, b)
	}
	start := time.Now()
	var wg sync.WaitGroup
	werrs := make([]error, n)
	for i, c := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, werrs[i] = bufs[i].WriteTo(c)
			c.(*net.TCPConn).CloseWrite()
		}()
	}
	var rerr error
	for range n {
		select {
		case err := <-received:
			rerr = errors.Join(rerr, err)
		case <-ctx.Done():
			return copyResult{}, ctx.Err()
		}
	}
	el := time.Since(start)
	wg.Wait()
	return copyResult{elapsed: el, bytes: total}, errors.Join(rerr, errors.Join(werrs...))
}
