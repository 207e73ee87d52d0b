package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/spoolfs"
)

// addurl, as SABnzbd does it: the job is queued at once in the state
// "Grabbing" (durably, with its URL) and its nzo_id answered; the NZB is
// fetched in the background, at most addurl_fetches at once, streamed to
// a file under max_nzb_size, from public addresses only unless
// addurl_allow_private. Fetched, the job becomes
// an ordinary queued job; refused (an HTTP error, too large, not an NZB)
// it goes to the history as Failed with the reason, where the *arr apps
// see it. A stop during the fetch leaves the job Grabbing: the next start
// fetches again.

// AddURL queues a job whose NZB is fetched from raw, and returns its
// nzo_id.
func (d *Daemon) AddURL(raw string, ao AddOptions) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("addurl: %q is not an http(s) URL", raw)
	}
	name, _ := SplitPassword(ao.Name)
	if name == "" {
		name, _ = SplitPassword(strings.TrimSuffix(path.Base(u.Path), ".nzb"))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := &Job{Name: newsget.SanitizeName(name, "download"), URL: u.String(), Grabbing: true, Added: d.opts.Now(),
		Paused: ao.Paused || ao.Priority == dlqueue.Paused, GivenName: ao.Name,
		Password: ao.Password}
	j.Category = d.category(ao.Category)
	j.Priority = d.jobPriority(ao.Priority, j.Category)
	j.ID = d.newIDLocked()
	if err := d.enqueueLocked(j); err != nil {
		return "", err
	}
	d.log.Info("grabbing", "nzo_id", j.ID, "url", u.Redacted())
	if d.life != nil {
		d.startGrab(j)
	}
	return j.ID, nil
}

// startGrab fetches j's NZB in the background, once one of the
// addurl_fetches slots is free. Called with mu held.
func (d *Daemon) startGrab(j *Job) {
	ctx := d.life
	d.grabs.Add(1)
	go func() {
		defer d.grabs.Done()
		select {
		case d.fetchSlots <- struct{}{}:
		case <-ctx.Done():
			return // still Grabbing on disk: fetched after the restart
		}
		nj, tmp, err := d.grab(ctx, j)
		<-d.fetchSlots
		if tmp != "" {
			defer os.Remove(tmp)
		}
		if ctx.Err() != nil {
			return // still Grabbing on disk: fetched again after the restart
		}
		if err != nil {
			d.mu.Lock()
			_, i := d.find(j.ID)
			d.mu.Unlock()
			if i >= 0 {
				d.finish(j, HistoryEntry{Status: "Failed", FailMessage: err.Error()})
			}
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if _, i := d.find(j.ID); i < 0 {
			return // deleted while it was fetched
		}
		if err := renameDurable(tmp, d.store.nzbPath(j.ID)); err != nil {
			d.log.Error("grab", "nzo_id", j.ID, "err", err)
			return // stays Grabbing; the next start tries again
		}
		j.Name, j.NZBName, j.Hash, j.Files, j.Bytes, j.Left = nj.Name, nj.NZBName, nj.Hash, nj.Files, nj.Bytes, nj.Left
		j.Password = nj.Password
		j.Grabbing = false
		if d.duplicateLocked(j, j.ID) {
			d.grabs.Add(1)
			go func() {
				defer d.grabs.Done()
				d.finish(j, HistoryEntry{Status: "Failed", FailMessage: "Duplicate NZB: " + j.Duplicate})
			}()
		}
		if err := d.store.saveState(&d.state); err != nil {
			d.log.Error("queue", "err", err)
		}
		d.log.Info("job added", "nzo_id", j.ID, "name", j.Name, "category", j.Category, "priority", j.Priority.String())
		d.preemptLocked()
	}()
}

// grab fetches j's NZB to a temp file beside the stored NZBs and parses
// it from there, so an NZB is never whole in memory. It returns the job
// the NZB makes and the temp file (to rename or remove; "" if none).
// A document that is not a usable NZB is refused with a message that
// quotes nothing of the answer; the log has the parser's reason.
func (d *Daemon) grab(ctx context.Context, j *Job) (*Job, string, error) {
	tmp, filename, err := d.fetchNZB(ctx, j.URL, filepath.Join(filepath.Dir(d.store.nzbPath(j.ID)), j.ID+".fetch.tmp"))
	if err != nil {
		return nil, tmp, err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return nil, tmp, fmt.Errorf("addurl: %w", err)
	}
	defer f.Close()
	nj, err := d.parseJobFrom(bufio.NewReaderSize(f, 64<<10), filename, AddOptions{Name: j.GivenName, Password: j.Password})
	if err != nil {
		d.log.Warn("addurl: refused NZB", "nzo_id", j.ID, "url", redactURL(j.URL), "err", err)
		host := ""
		if u, perr := url.Parse(j.URL); perr == nil {
			host = u.Host
		}
		return nil, tmp, fmt.Errorf("refused NZB %s: the answer from %s is not a usable NZB (the log says why)", filename, host)
	}
	return nj, tmp, nil
}

// redactURL hides a URL's password and query (indexers put API keys
// there).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	u.RawQuery = ""
	return u.Redacted()
}

// renameDurable moves a synced temp file to its place and syncs the
// directory.
func renameDurable(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("serve: store NZB: %w", err)
	}
	if err := spoolfs.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("serve: store NZB: %w", err)
	}
	return nil
}

// privateAddrError refuses a connection to an address addurl may not
// reach.
type privateAddrError struct{ addr netip.Addr }

func (e *privateAddrError) Error() string {
	return fmt.Sprintf("%s is a loopback, private or link-local address ([serve] addurl_allow_private = true allows it)", e.addr)
}

// privateAddr reports whether a is loopback, private (RFC 1918, RFC 4193,
// shared CGNAT), link-local, unspecified or multicast: addresses of the
// machine's own network that a URL from an indexer has no business
// naming.
func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() ||
		cgnat.Contains(a) || thisNetwork.Contains(a)
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

// grabClient is the HTTP client of addurl. It checks each address when
// it dials, after name resolution and on every redirect, so a name that
// resolves (or is rebound) to a private address is refused unless
// allowPrivate. It uses no proxy: a proxy would dial in its place.
func grabClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, Control: func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("addurl: dialing %q: %w", address, err)
		}
		if privateAddr(ap.Addr()) {
			return &privateAddrError{addr: ap.Addr().Unmap()}
		}
		return nil
	}}
	tr := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 30 * time.Second,
		ResponseHeaderTimeout: timeout, MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: true}
	return &http.Client{Timeout: timeout, Transport: tr}
}

// fetchError says why a fetch failed without quoting the other side's
// bytes (a service that is not an HTTP server answers with its banner).
func fetchError(host string, err error) error {
	var pa *privateAddrError
	var cv *tls.CertificateVerificationError
	var oe *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &pa):
		return fmt.Errorf("addurl: refused to fetch from %s: %w", host, pa)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("addurl: %s did not answer in time", host)
	case errors.As(err, &cv):
		return fmt.Errorf("addurl: %s: its TLS certificate is not trusted", host)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("addurl: %s: cannot connect: %v", host, oe.Err)
	}
	return fmt.Errorf("addurl: %s did not give a usable HTTP answer", host)
}
