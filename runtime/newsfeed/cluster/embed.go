package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is a NATS cluster with JetStream run inside this process, on
// loopback: what `newsfeed demo -cluster`, newsbench and the tests run
// against. Each server has its own store directory and fixed ports, so a
// server stopped with Kill comes back with Restart on the same state, as
// a real server restarted would.
type Embedded struct {
	dir     string
	client  []int // client ports
	route   []int // cluster ports
	servers []*server.Server
	tune    func(*server.Options) // changes each server's options; nil for none
}

// StartEmbedded starts n servers (1: a lone JetStream server; 3 or more: a
// cluster with routes between all) keeping their state under dir.
func StartEmbedded(dir string, n int) (*Embedded, error) {
	return startEmbedded(dir, n, nil)
}

// startEmbedded is StartEmbedded with tune applied to each server's
// options before it starts (and restarts). The ports are free when chosen
// but not held until the servers listen: when another process takes one
// meanwhile, the servers start again on ports chosen afresh.
func startEmbedded(dir string, n int, tune func(*server.Options)) (*Embedded, error) {
	for try := 1; ; try++ {
		e, err := startEmbeddedOnce(dir, n, tune)
		if err == nil || !errors.Is(err, errListen) || try == 3 {
			return e, err
		}
	}
}

func startEmbeddedOnce(dir string, n int, tune func(*server.Options)) (*Embedded, error) {
	e := &Embedded{dir: dir, servers: make([]*server.Server, n), tune: tune}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	e.client, e.route = ports[:n], ports[n:]
	errs := make(chan error, n)
	for i := range n {
		// The servers of a cluster wait for each other to elect the
		// meta leader: start them together.
		go func() { errs <- e.Restart(i) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		e.Shutdown()
		return nil, first
	}
	return e, nil
}

// errListen: a server could not listen on one of its ports.
var errListen = errors.New("cannot listen")

// fatalLog is an embedded server's logger: it passes on the first fatal
// message (a port it cannot listen on) and drops every other line.
type fatalLog chan string

func (l fatalLog) Fatalf(format string, v ...any) {
	select {
	case l <- fmt.Sprintf(format, v...):
	default:
	}
}
func (fatalLog) Noticef(string, ...any) {}
func (fatalLog) Warnf(string, ...any)   {}
func (fatalLog) Errorf(string, ...any)  {}
func (fatalLog) Debugf(string, ...any)  {}
func (fatalLog) Tracef(string, ...any)  {}

// freePorts finds n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: embedded nats: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Restart starts server i again (or for the first time) on its store
// directory and ports, and waits until it takes connections.
func (e *Embedded) Restart(i int) error {
	n := len(e.client)
	opts := &server.Options{
		ServerName: "nats-" + strconv.Itoa(i),
		Host:       "127.0.0.1",
		Port:       e.client[i],
		JetStream:  true,
		StoreDir:   filepath.Join(e.dir, "nats-"+strconv.Itoa(i)),
		NoLog:      true,
		NoSigs:     true,
		// A JetStream cluster must own the memory and disk it may use:
		// small, fixed limits keep the servers of a test or demo from
		// reserving the machine's.
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  16 << 30,
	}
	if n > 1 {
		opts.Cluster = server.ClusterOpts{Name: "newsflow", Host: "127.0.0.1", Port: e.route[i]}
		for j := range n {
			if j != i {
				opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats", Host: "127.0.0.1:" + strconv.Itoa(e.route[j])})
			}
		}
	}
	if e.tune != nil {
		e.tune(opts)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("cluster: embedded nats %d: %w", i, err)
	}
	fatal := make(fatalLog, 1)
	s.SetLogger(fatal, false, false)
	go s.Start()
	for deadline := time.Now().Add(30 * time.Second); !s.ReadyForConnections(50 * time.Millisecond); {
		select {
		case msg := <-fatal:
			s.Shutdown()
			if strings.Contains(msg, "listening on") {
				return fmt.Errorf("cluster: embedded nats %d: %s: %w", i, msg, errListen)
			}
			return fmt.Errorf("cluster: embedded nats %d: %s", i, msg)
		default:
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return fmt.Errorf("cluster: embedded nats %d: not ready after 30s", i)
		}
	}
	e.servers[i] = s
	return nil
}

// Kill stops server i at once (its state stays in its directory).
func (e *Embedded) Kill(i int) {
	if s := e.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		e.servers[i] = nil
	}
}

// Shutdown stops every server.
func (e *Embedded) Shutdown() {
	for i := range e.servers {
		e.Kill(i)
	}
}

// SlowConsumers counts the connections the running servers cut off
// because they did not read their deliveries in time (their pending
// outbound data passed max_pending, or a write passed write_deadline):
// what was in flight to such a connection, and what it had written and
// the server not yet read (acks), is lost.
func (e *Embedded) SlowConsumers() int64 {
	var n int64
	for _, s := range e.servers {
		if s != nil {
			n += s.NumSlowConsumers()
		}
	}
	return n
}

// URLs are the servers' client URLs, for [cluster] nats.
func (e *Embedded) URLs() []string {
	var u []string
	for _, p := range e.client {
		u = append(u, "nats://127.0.0.1:"+strconv.Itoa(p))
	}
	return u
}

// WaitJetStream waits until JetStream answers on a quorum (a meta leader
// is elected), up to d.
func (e *Embedded) WaitJetStream(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, s := range e.servers {
			if s != nil && s.JetStreamIsLeader() {
				return nil
			}
		}
		if len(e.servers) == 1 && e.servers[0] != nil && e.servers[0].JetStreamEnabled() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("cluster: embedded nats: no JetStream meta leader")
}
