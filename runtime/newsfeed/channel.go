package newsfeed

// The INN drop-in: newsfeed as innd's channel feed, in innfeed's place.
//
// innd writes one line per article to the channel's standard input, as the
// newsfeeds entry's W flags say; innfeed's setup ("Tc,Wnm*") gives
//
//	@0301000000000000000100000001@ <id@example> site1 site2
//
// the storage token, the Message-ID, and the sites (funnel feeds) that get
// the article. RunChannel reads those lines, fetches the articles from INN's
// storage manager (sm -S, rnews batch output) and stores each in the
// relay's spool for the peers named on its line (the relay's [[peer]] names
// must be the newsfeeds site names), with the same group commit as ingest:
// spool record and per-peer queue journal fsynced before the next lines are
// read (the queue journal in the same round, unlike ingest's articles: the
// fan-out recovery routes by the relay's patterns, not by innd's sites). So the channel is read only as fast as it can be made durable;
// innd keeps what we have not read in its channel buffer, and when the
// channel closes (innd shut down, restarted, or "ctlinnd flush") RunChannel
// finishes the batch in hand and returns, the relay writes its queues to
// backlog, and nothing read is lost. What innd had buffered but could not
// write, it spools to pathoutgoing/<channel site> for the next start
// (innd's own backlog; ReadChannelFile takes such a file).
//
// Why not one long-lived "sm -S" reading tokens on stdin: sm writes to a
// pipe through stdio without ever flushing (sm.c), so its output would
// arrive in 4 KiB lumps, or only at exit, and a token it cannot retrieve
// leaves no trace on stdout to keep the two streams in step. One sm per
// batch (up to ChannelBatch tokens as arguments) costs a process start per
// batch, not per article, and its output is matched to the lines by
// Message-ID, so a missing article cannot shift the rest.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// ChannelBatch is the most lines fetched and made durable together.
const ChannelBatch = 256

// maxChannelLine bounds one channel line (a token, an id, the sites).
const maxChannelLine = 8 << 10

// ChannelLine is one line of innd's channel feed.
type ChannelLine struct {
	Token     string   // "@...@", the INN storage token
	MessageID string   // "<...>"
	Sites     []string // the sites to feed; empty when the entry has no "*"
}

// ParseChannelLine parses "@token@ <message-id> [site...]" (newsfeeds
// W flags "nm*"), without its line ending.
func ParseChannelLine(line []byte) (ChannelLine, error) {
	f := strings.Fields(string(line))
	if len(f) < 2 {
		return ChannelLine{}, fmt.Errorf("channel line %q: want \"@token@ <message-id> site...\"", line)
	}
	tok, id := f[0], f[1]
	if len(tok) < 3 || tok[0] != '@' || tok[len(tok)-1] != '@' || strings.Count(tok, "@") != 2 {
		return ChannelLine{}, fmt.Errorf("channel line %q: %q is not a storage token", line, tok)
	}
	if err := proto.ValidMessageID(id); err != nil {
		return ChannelLine{}, fmt.Errorf("channel line %q: %w", line, err)
	}
	return ChannelLine{Token: tok, MessageID: id, Sites: f[2:]}, nil
}

// Fetcher gets articles from INN's storage by token.
type Fetcher interface {
	// Fetch returns the articles (native form) it could retrieve, by
	// Message-ID; an article INN no longer holds is simply absent. An
	// error means the fetch itself failed (sm would not run, or ended
	// without accounting for every token).
	Fetch(ctx context.Context, tokens []string) (map[string][]byte, error)
}

// SM fetches articles with INN's sm program (sm -S TOKEN...).
type SM struct {
	Path       string // the sm binary; /usr/lib/news/bin/sm when empty
	MaxArticle int    // the largest article taken, in octets
}

// Fetch runs one sm -S for the tokens and reads its rnews batch.
func (s SM) Fetch(ctx context.Context, tokens []string) (map[string][]byte, error) {
	path := s.Path
	if path == "" {
		path = "/usr/lib/news/bin/sm"
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"-S"}, tokens...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("sm: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sm: %w", err)
	}
	arts := map[string][]byte{}
	rn := proto.NewRnewsReader(bufio.NewReaderSize(out, 64<<10), s.MaxArticle)
	var rerr error
	for {
		a, err := rn.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			io.Copy(io.Discard, out)
			break
		}
		if h, _, err := proto.ParseHeaders(a); err == nil {
			if id, err := h.MessageID(); err == nil {
				arts[id] = a
			}
		}
	}
	werr := cmd.Wait()
	switch {
	case rerr != nil:
		return arts, fmt.Errorf("sm -S output: %w (stderr: %s)", rerr, strings.TrimSpace(stderr.String()))
	case werr != nil && len(arts)+smGone(stderr.Bytes()) < len(tokens):
		// sm exits 1 when any token fails, saying so on standard error
		// for each. Tokens neither returned nor reported gone mean sm
		// itself failed (storage not opened, killed): an error of the
		// run, and nothing is counted missing on its word.
		return arts, fmt.Errorf("sm: %w (stderr: %s)", werr, strings.TrimSpace(stderr.String()))
	}
	return arts, nil
}

// smGone counts the tokens sm reports on standard error as gone
// ("could not retrieve @...@": cancelled, expired or never stored) or as
// no storage token at all.
func smGone(stderr []byte) int {
	n := 0
	for _, l := range bytes.Split(stderr, []byte("\n")) {
		if bytes.Contains(l, []byte("could not retrieve @")) || bytes.Contains(l, []byte("is not a storage token")) {
			n++
		}
	}
	return n
}

// ChannelResult counts what RunChannel did.
type ChannelResult struct {
	Lines     int // lines read
	Bad       int // lines that did not parse
	NoPeer    int // lines naming no configured peer
	Missing   int // articles sm could not retrieve
	Stored    InjectResult
	BySiteMsg map[string]int // unknown site -> lines naming it
}

// RunChannel reads innd's channel lines from in until EOF or ctx ends,
// storing each batch durably before it reads the next; see the top of
// this file. Run must be serving the relay (its committer) meanwhile.
func (r *Relay) RunChannel(ctx context.Context, in io.Reader, f Fetcher) (ChannelResult, error) {
	res := ChannelResult{BySiteMsg: map[string]int{}}
	br := bufio.NewReaderSize(in, 64<<10)
	var batch []ChannelLine
	for {
		line, err := readChannelLine(br)
		if len(line) > 0 {
			res.Lines++
			if cl, perr := ParseChannelLine(line); perr != nil {
				res.Bad++
				r.log.Warn("innd channel: line skipped", "err", perr)
			} else {
				batch = append(batch, cl)
			}
		}
		// Take what innd has already written, up to a batch; then make
		// it durable before reading on.
		if err == nil && br.Buffered() > 0 && len(batch) < ChannelBatch {
			continue
		}
		if len(batch) > 0 {
			if ferr := r.channelBatch(ctx, batch, f, &res); ferr != nil {
				return res, ferr
			}
			batch = batch[:0]
		}
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("innd channel: %w", err)
		}
		if ctx.Err() != nil {
			return res, nil
		}
	}
}

// readChannelLine reads one line without its ending; an over-long line
// is skipped whole and reported empty with a warning left to the parser.
func readChannelLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		return []byte("(line too long)"), err
	}
	if err == io.EOF && len(line) > 0 {
		err = nil // the last line lacked its newline; EOF comes next read
	}
	return bytes.TrimRight(line, "\r\n"), err
}

// ReadChannelFile feeds the lines of a file innd spooled for the channel
// (pathoutgoing/<site>) and removes it once every line is durable.
func (r *Relay) ReadChannelFile(ctx context.Context, name string, f Fetcher) (ChannelResult, error) {
	fh, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return ChannelResult{}, nil
	}
	if err != nil {
		return ChannelResult{}, fmt.Errorf("innd channel backlog: %w", err)
	}
	res, err := r.RunChannel(ctx, fh, f)
	fh.Close()
	if err == nil && ctx.Err() == nil {
		err = os.Remove(name)
	}
	return res, err
}

// channelBatch fetches a batch's articles and stores them for the peers
// their lines name, waiting until they are durable.
func (r *Relay) channelBatch(ctx context.Context, batch []ChannelLine, f Fetcher, res *ChannelResult) error {
	var tokens []string
	want := map[string][]*peer{}
	for _, cl := range batch {
		peers := r.peersNamed(cl.Sites, res)
		if len(peers) == 0 {
			res.NoPeer++
			continue
		}
		if _, dup := want[cl.MessageID]; !dup {
			tokens = append(tokens, cl.Token)
		}
		want[cl.MessageID] = append(want[cl.MessageID], peers...)
	}
	if len(tokens) == 0 {
		return nil
	}
	arts, err := f.Fetch(ctx, tokens)
	if err != nil && len(arts) == 0 {
		return fmt.Errorf("innd channel: %w", err)
	}
	if err != nil {
		r.log.Warn("innd channel: fetch", "err", err)
	}
	now := r.now()
	var waits []chan ingest.Result
	r.com.start()
	for id, peers := range want {
		a, ok := arts[id]
		if !ok {
			res.Missing++
			r.log.Warn("innd channel: article not retrievable from INN's storage (cancelled or expired?)", "id", id)
			continue
		}
		h, _, err := proto.ParseHeaders(a)
		if err != nil {
			res.Stored.reject("bad header")
			continue
		}
		switch r.spool.History().Status(id, now) {
		case spoolfs.Stored, spoolfs.Pending, spoolfs.Rejected:
			res.Stored.Refused++
			continue
		}
		ch := make(chan ingest.Result, 1)
		// innd stored the article with its own Path entry: keep it as is.
		out, queued := r.put(now, id, proto.AppendWire(nil, a), h, pendingArt{done: ch, peers: peers})
		if !queued {
			if out.Outcome == ingest.StoreDuplicate {
				res.Stored.Refused++
			} else {
				res.Stored.reject(strings.ToLower(out.Reason))
			}
			continue
		}
		waits = append(waits, ch)
	}
	for _, ch := range waits {
		// Wait even when ctx ends: the batch was read from innd, so it
		// must become durable before anything more is read or we stop.
		if out := <-ch; out.Outcome == ingest.StoreAccepted {
			res.Stored.Accepted++
		} else {
			res.Stored.reject(strings.ToLower(out.Reason))
		}
	}
	return nil
}

// peersNamed returns the relay's peers named in sites, counting names
// that are none of them.
func (r *Relay) peersNamed(sites []string, res *ChannelResult) []*peer {
	var out []*peer
	for _, s := range sites {
		found := false
		for _, p := range r.peers {
			if p.cfg.Name == s {
				out = append(out, p)
				found = true
				break
			}
		}
		if !found {
			if res.BySiteMsg[s] == 0 {
				r.log.Warn("innd channel: site is not a [[peer]] of this configuration; its articles are skipped", "site", s)
			}
			res.BySiteMsg[s]++
		}
	}
	return out
}
