package newsweb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// Injecting: for a server whose ServerConfig.Inject names an address,
// newsweb is the injecting agent of its posts (RFC 5537 §3.4), as web
// gateways are: the article carries newsweb's own Path, Injection-Date
// and Injection-Info (compose.go), and is offered with IHAVE (RFC 3977
// §6.3.2) to that address, which takes it as a feed from this host (for
// INN: a peer in incoming.conf). Each post is one connection of its own:
// machine/handshake (greeting, CAPABILITIES, STARTTLS, AUTHINFO) and then
// machine/feed in IHAVE mode with the one article, then QUIT.

// injectToken names the one article a posting connection offers.
const injectToken = "post"

// oneBody is the body source of a posting connection: its article.
type oneBody []byte

func (b oneBody) Body(token string) ([]byte, error) {
	if token != injectToken {
		return nil, fmt.Errorf("no article %q", token)
	}
	return b, nil
}

// Errors of inject, besides the connection's.
var (
	// errInjectRefused: the server would not take the article (435, 437).
	errInjectRefused = errors.New("the news server refused the article")
	// errInjectDenied: the server takes no articles from this host (502,
	// 500/501 to IHAVE).
	errInjectDenied = errors.New("the news server takes no articles from this host")
)

// inject offers raw (CRLF wire form, not dot-stuffed) as id to the
// server's Inject address with IHAVE. It returns nil once the server took
// it (235); errInjectRefused (with the server's answer) for 435 or 437,
// errInjectDenied when the server takes no feed from this host, and
// another error when it could not be done now (436, a connection or
// authentication failure).
func (s *Service) inject(ctx context.Context, id string, raw []byte) error {
	t := s.cfg.Inject
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	nc, err := s.dialAddr(ctx, t.Addr, t.TLS == TLSImplicit)
	if err != nil {
		return err
	}
	gc := goroutine.New(nc, goroutine.Options{TLSConfig: s.cfg.tlsConfigFor(t.Addr), Now: s.now})
	defer gc.Close()
	mode := handshake.TLSIfOffered
	switch {
	case t.TLS == TLSImplicit:
		mode = handshake.TLSOff
	case t.User != "":
		mode = handshake.TLSRequired
	}
	_, left, err := driver.Handshake(ctx, gc, s.now(), handshake.Config{User: t.User, Pass: t.Pass, TLS: mode, StepTimeout: s.opts.DialTimeout})
	if err != nil {
		return fmt.Errorf("reader: %s: inject: %w", s.cfg.Name, err)
	}
	wire := proto.AppendBlock(nil, raw)
	f := feed.New(s.now(), feed.Config{User: t.User, Pass: t.Pass, Bodies: oneBody(wire), ResponseTimeout: s.opts.RequestTimeout})
	if len(left) > 0 {
		if err := f.Receive(s.now(), left); err != nil {
			return fmt.Errorf("reader: %s: inject: %w", s.cfg.Name, err)
		}
	}
	offered, done := false, false
	var result error
	runErr := gc.Run(ctx, f, func(now time.Time) error {
		for {
			ev, ok := f.NextEvent()
			if !ok {
				return nil
			}
			switch e := ev.(type) {
			case feed.WantMore:
				if !offered {
					offered = true
					f.Offer(now, feed.Article{Token: injectToken, MessageID: id, Size: int64(len(wire))})
				}
			case feed.Accepted:
				done, result = true, nil
				f.Close(now)
			case feed.Refused:
				done, result = true, fmt.Errorf("%w: 435: the server has %s already", errInjectRefused, id)
				f.Close(now)
			case feed.Rejected:
				done, result = true, fmt.Errorf("%w: %d: %q", errInjectRefused, e.Code, e.Reason)
				f.Close(now)
			case feed.Deferred:
				done, result = true, fmt.Errorf("the news server asks to be offered the article later (%d)", e.Code)
				f.Close(now)
			case feed.Closed:
				if !done {
					done, result = true, e
					if e.Reason == feed.ReasonDenied || e.Reason == feed.ReasonNoTransfer {
						result = fmt.Errorf("%w: %w", errInjectDenied, e)
					}
				}
			}
		}
	})
	if !done {
		result = fmt.Errorf("the connection ended before the server answered: %w", runErr)
	}
	if result != nil {
		return fmt.Errorf("reader: %s: inject %s: %w", s.cfg.Name, id, result)
	}
	return nil
}
