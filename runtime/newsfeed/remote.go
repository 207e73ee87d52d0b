package newsfeed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// A running relay writes the addresses it listens on to newsfeed.addr in
// its spool directory ("listen=HOST:PORT" and "admin=HOST:PORT" lines), so
// that `newsfeed status` and `newsfeed inject` find it even when the
// configuration asks for port 0. The file is removed on a clean stop.

// AddrFile is the path of the address file of the spool dir.
func AddrFile(spool string) string { return filepath.Join(spool, "newsfeed.addr") }

func (r *Relay) writeAddrFile() {
	text := "listen=" + r.Addr().String() + "\n"
	if a := r.AdminAddr(); a != nil {
		text += "admin=" + a.String() + "\n"
	}
	if err := os.WriteFile(AddrFile(r.cfg.Spool), []byte(text), 0o644); err != nil {
		r.log.Warn("cannot write the address file", "err", err)
	}
}

// ReadAddrs returns the addresses a relay running on spool listens on:
// ingest and admin ("" when it has none).
func ReadAddrs(spool string) (listen, admin string, err error) {
	b, err := os.ReadFile(AddrFile(spool))
	if err != nil {
		return "", "", fmt.Errorf("no running newsfeed found: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, "=")
		switch k {
		case "listen":
			listen = v
		case "admin":
			admin = v
		}
	}
	return listen, admin, nil
}

// InjectRemote offers the articles of the files (rnews batches or single
// articles) to a running relay's ingest listener with IHAVE, for when the
// spool is in use: the relay validates, stores and routes them exactly as
// it does for any upstream. 235 counts as accepted, 435 as refused, 437
// as rejected (with the relay's reason).
func InjectRemote(ctx context.Context, addr string, files []string, maxSize int) (InjectResult, error) {
	var res InjectResult
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return res, fmt.Errorf("inject: %w", err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	line := func() (string, error) {
		nc.SetReadDeadline(time.Now().Add(2 * time.Minute))
		l, err := br.ReadString('\n')
		return strings.TrimRight(l, "\r\n"), err
	}
	if g, err := line(); err != nil || !strings.HasPrefix(g, "200") {
		return res, fmt.Errorf("inject: %s: greeting %q: %v", addr, g, err)
	}
	offer := func(a []byte) error {
		h, _, err := proto.ParseHeaders(a)
		if err != nil {
			res.reject("bad header")
			return nil
		}
		id, err := h.MessageID()
		if err != nil {
			res.reject("bad Message-ID")
			return nil
		}
		fmt.Fprintf(nc, "IHAVE %s\r\n", id)
		l, err := line()
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(l, "435"):
			res.refuse(id, "already in history (435)")
			return nil
		case strings.HasPrefix(l, "335"):
		default:
			return fmt.Errorf("IHAVE %s: %q", id, l)
		}
		if _, err := nc.Write(proto.ToWire(a)); err != nil {
			return err
		}
		if l, err = line(); err != nil {
			return err
		}
		code, text, _ := strings.Cut(l, " ")
		switch code {
		case "235":
			res.Accepted++
		case "437":
			if text == "Duplicate" {
				res.refuse(id, "already in history")
			} else {
				res.rejectID(id, strings.ToLower(text))
			}
		default:
			return fmt.Errorf("article %s: %q", id, l)
		}
		return nil
	}
	for _, name := range files {
		if err := eachArticle(name, maxSize, &res, offer); err != nil {
			return res, fmt.Errorf("inject: %s: %w", name, err)
		}
	}
	fmt.Fprintf(nc, "QUIT\r\n")
	return res, nil
}

// eachArticle calls fn for every article of a file: an rnews batch, or a
// single article.
func eachArticle(name string, maxSize int, res *InjectResult, fn func([]byte) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	prefix, _ := br.Peek(8)
	if !proto.IsRnewsBatch(prefix) {
		data, err := io.ReadAll(io.LimitReader(br, int64(maxSize)+1))
		if err != nil {
			return err
		}
		if len(data) > maxSize {
			res.reject("too large")
			return nil
		}
		return fn(data)
	}
	rn := proto.NewRnewsReader(br, maxSize)
	for {
		a, err := rn.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	}
}
