package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/newsfeed/cluster"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// DemoCluster shows cluster mode on loopback: a 3-server NATS cluster with
// JetStream embedded in this process (replicas 3), two newsfeed nodes run
// as child processes of this program, and two sinks. It injects articles
// into node-1, kills node-1 with SIGKILL and injects into node-2 (which
// feeds both sinks meanwhile), restarts node-1, kills a NATS server and
// injects into node-1 again, restarts the NATS server, and returns nil
// only when every article reached both sinks.
func DemoCluster(ctx context.Context, out io.Writer, opts DemoOptions) error {
	if opts.Articles <= 0 {
		opts.Articles = 300
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	dir, err := os.MkdirTemp("", "newsfeed-cluster-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	nats, err := cluster.StartEmbedded(filepath.Join(dir, "nats"), 3)
	if err != nil {
		return err
	}
	defer nats.Shutdown()
	if err := nats.WaitJetStream(30 * time.Second); err != nil {
		return err
	}
	say("newsfeed demo -cluster: 3 NATS servers with JetStream on %s", strings.Join(nats.URLs(), ", "))
	sinks := make([]*nntptest.Server, 2)
	for i, name := range []string{"sink-a", "sink-b"} {
		s, err := nntptest.New(nntptest.Options{Hostname: name})
		if err != nil {
			return fmt.Errorf("demo: start %s: %w", name, err)
		}
		defer s.Close()
		sinks[i] = s
	}
	logOut := opts.Log
	if logOut == nil {
		logOut = io.Discard
	}
	nodes := make([]*demoNode, 2)
	for i := range nodes {
		nodes[i], err = newDemoNode(dir, fmt.Sprintf("node-%d", i+1), nats.URLs(), sinks, self, logOut)
		if err != nil {
			return err
		}
		defer nodes[i].kill()
	}
	for _, nd := range nodes {
		if err := nd.start(ctx); err != nil {
			return err
		}
	}
	say("two newsfeed nodes: node-1 ingest %s, node-2 ingest %s; peers sink-a %s, sink-b %s",
		nodes[0].listen, nodes[1].listen, sinks[0].HostPort(), sinks[1].HostPort())

	var ids []string
	inject := func(nd *demoNode, from, to int) error {
		var batch bytes.Buffer
		for i := from; i < to; i++ {
			id, a := DemoArticle(i)
			ids = append(ids, id)
			fmt.Fprintf(&batch, "#! rnews %d\n", len(a))
			batch.Write(a)
		}
		file := filepath.Join(dir, fmt.Sprintf("batch.%d", from))
		if err := os.WriteFile(file, batch.Bytes(), 0o644); err != nil {
			return err
		}
		res, err := newsfeed.InjectRemote(ctx, nd.listen, []string{file}, 1<<20)
		if err != nil {
			return fmt.Errorf("demo: inject into %s: %w", nd.name, err)
		}
		say("injected %d articles into %s: %s", to-from, nd.name, res)
		return nil
	}
	third := opts.Articles / 3
	if err := inject(nodes[0], 0, third); err != nil {
		return err
	}
	nodes[0].kill()
	say("node-1 killed with SIGKILL: node-2 carries both peers' feeds on")
	if err := inject(nodes[1], third, 2*third); err != nil {
		return err
	}
	for _, s := range sinks {
		if err := await(ctx, s, ids); err != nil {
			return fmt.Errorf("demo: %s while node-1 was down: %w", s.HostPort(), err)
		}
	}
	say("both sinks have all %d, node-1 still down", len(ids))
	if err := nodes[0].start(ctx); err != nil {
		return err
	}
	say("node-1 restarted")
	nats.Kill(0)
	say("NATS server 0 killed: the other two keep a quorum")
	if err := inject(nodes[0], 2*third, opts.Articles); err != nil {
		return err
	}
	if err := nats.Restart(0); err != nil {
		return err
	}
	say("NATS server 0 restarted")
	okA := await(ctx, sinks[0], ids)
	okB := await(ctx, sinks[1], ids)
	for _, nd := range nodes {
		if line, err := nd.statusLine(ctx); err == nil {
			say("  %s", line)
		}
	}
	for _, nd := range nodes {
		nd.stop()
	}
	for i, err := range []error{okA, okB} {
		if err != nil {
			return fmt.Errorf("demo: %s is missing articles: %w", []string{"sink-a", "sink-b"}[i], err)
		}
	}
	say("every one of the %d articles reached both peers (checked by message-id)", len(ids))
	return nil
}

// demoNode is a newsfeed node run as a child process. It listens on ports
// of its choosing, a fresh pair each start, read from the address file in
// its spool (listen and admin are those of the running child).
type demoNode struct {
	name, conf, spool, listen, admin string
	self                             string
	log                              io.Writer
	cmd                              *exec.Cmd
}

func newDemoNode(dir, name string, urls []string, sinks []*nntptest.Server, self string, log io.Writer) (*demoNode, error) {
	nd := &demoNode{name: name, self: self, log: log, spool: filepath.Join(dir, name)}
	var b strings.Builder
	fmt.Fprintf(&b, "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\nspool = %q\npathhost = \"%s.demo.invalid\"\n", nd.spool, name)
	for i, s := range sinks {
		fmt.Fprintf(&b, "[[peer]]\nname = \"sink-%c\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 2\nreconnect_max = \"500ms\"\n", 'a'+i, s.Port())
	}
	fmt.Fprintf(&b, "[cluster]\nnats = [\"%s\"]\nnode = %q\nreplicas = 3\nshards = 3\nack_wait = \"3s\"\nreserve_ttl = \"3s\"\n",
		strings.Join(urls, `", "`), name)
	nd.conf = filepath.Join(dir, name+".toml")
	return nd, os.WriteFile(nd.conf, []byte(b.String()), 0o644)
}

// start runs the node and waits until it listens, at the addresses it
// wrote to its address file.
func (nd *demoNode) start(ctx context.Context) error {
	// A node killed before left its address file: it names no listener.
	os.Remove(newsfeed.AddrFile(nd.spool))
	nd.listen, nd.admin = "", ""
	nd.cmd = exec.Command(nd.self, "-config", nd.conf)
	// NEWSFEED_CHILD makes a test binary run as newsfeed (TestMain).
	nd.cmd.Env = append(os.Environ(), "NEWSFEED_CHILD=1")
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		return fmt.Errorf("demo: start %s: %w", nd.name, err)
	}
	for ctx.Err() == nil {
		listen, admin, _ := newsfeed.ReadAddrs(nd.spool)
		if listen != "" && admin != "" {
			c, err := net.DialTimeout("tcp", listen, time.Second)
			if err == nil {
				c.Close()
				nd.listen, nd.admin = listen, admin
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("demo: %s does not listen: %w", nd.name, ctx.Err())
}

// kill ends the node with SIGKILL.
func (nd *demoNode) kill() {
	if nd.cmd != nil && nd.cmd.Process != nil {
		nd.cmd.Process.Signal(syscall.SIGKILL)
		nd.cmd.Wait()
		nd.cmd = nil
	}
}

// stop ends the node with SIGTERM (a graceful stop).
func (nd *demoNode) stop() {
	if nd.cmd != nil && nd.cmd.Process != nil {
		nd.cmd.Process.Signal(syscall.SIGTERM)
		nd.cmd.Wait()
		nd.cmd = nil
	}
}

// statusLine is the node's cluster line from its admin listener.
func (nd *demoNode) statusLine(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+nd.admin+"/status.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var st cluster.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", err
	}
	var peers []string
	for _, p := range st.Peers {
		peers = append(peers, fmt.Sprintf("%s accepted %d deferred %d", p.Name, p.Accepted, p.Deferred))
	}
	return st.Cluster.Line() + "; this node fed " + strings.Join(peers, ", "), nil
}
