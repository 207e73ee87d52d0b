package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions say how a node reaches NATS.
type ConnectOptions struct {
	URLs      []string
	Name      string // client name, seen in the servers' monitoring
	CredsFile string // NATS credentials (JWT and seed)
	CAFile    string // roots for the servers' TLS certificates
	InOrder   bool   // try URLs in their order (the first preferred), not shuffled
	Log       *slog.Logger
}

// Connect connects to any of the servers and keeps reconnecting for ever:
// when a NATS server dies the client moves to another, and publishes wait
// (bounded by their contexts) until it is back.
func Connect(o ConnectOptions) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
		nats.Timeout(5 * time.Second),
	}
	if o.InOrder {
		opts = append(opts, nats.DontRandomize())
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if log := o.Log; log != nil {
		opts = append(opts,
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				log.Warn("nats disconnected", "err", err)
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				log.Info("nats reconnected", "server", nc.ConnectedUrlRedacted())
			}),
			// Asynchronous errors: a subscription that dropped messages
			// (the client's slow consumer), a server's -ERR (among them
			// the server's slow consumer, which closes the connection).
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				subj := ""
				if sub != nil {
					subj = sub.Subject
				}
				log.Warn("nats error", "sub", subj, "err", err)
			}))
	}
	nc, err := nats.Connect(strings.Join(o.URLs, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to %s: %w", strings.Join(o.URLs, ","), err)
	}
	return nc, nil
}

// preferring returns urls with urls[i] first and the others after it in
// their order: the list of a connection that prefers server i (with
// ConnectOptions.InOrder).
func preferring(urls []string, i int) []string {
	return append([]string{urls[i]}, slices.Delete(slices.Clone(urls), i, i+1)...)
}
