// Package searchindex holds newsweb's search index on disk: per group, a
// compact table of its articles' overview (number, date, message-id,
// subject, author), searched by subject and author words and a date range.
//
// # Theory of operation
//
// Each group has one file, <dir>/<group>.idx, of records appended in
// batches, one line each:
//
//	number TAB unix-date TAB message-id TAB subject TAB from TAB crc32 LF
//	"R" TAB lo TAB hi TAB crc32 LF
//
// where crc32 (IEEE, 8 hex digits) covers the bytes before its TAB, and
// the fields hold no TAB, CR or LF (they are replaced by spaces). The
// first kind is an article; the second, a range record, ends every batch
// and says which article numbers the index now covers, [lo, hi]: every
// article of the group in that range is in the file. The owner indexes
// a group's newest articles first and then extends the range both ways:
// upward with new articles, downward toward the oldest, so a batch's
// articles lie above or below the ones before it, each batch ascending.
// A batch and its range record are appended with one write and one fsync
// before Append returns. On Open every file is read back; the first
// record that is incomplete or fails its checksum (a write cut by a
// crash), or names an article already read, ends the file, and so do
// articles after the last range record (a batch whose range record never
// got to disk): the file is truncated after the last good range record,
// and the articles cut are fetched again. A file with no range record at
// all (one written before range records) covers its lowest to its
// highest article. The index is a cache of the news servers' overview, so
// nothing is lost by that.
//
// In memory each group is a table of columns, a row per article in the
// order the articles were appended, with the rows sorted by number beside
// it; Search scans it newest first, matching every query term (a word or a "quoted phrase") as a
// substring of the lower-cased subject and author, or, in a group whose
// bodies are indexed (body.go), as whole words of the body (a scan of
// 100,000 articles takes a few milliseconds: BenchmarkSearch,
// BenchmarkBodySearch).
//
// Damage found by Open and LoadBodies is cut or skipped, never fatal;
// Damage says what was lost.
//
// Size is bounded: when the files together (overviews and bodies) pass
// MaxBytes, whole groups are dropped, the least recently searched first
// (files removed, tables freed); the one being appended to is kept.
package searchindex

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// suffix names index files.
const suffix = ".idx"

// maxRecord is the longest record read back; longer lines are damage.
const maxRecord = 64 << 10

// Entry is one article in the index.
type Entry struct {
	Number    int64
	Date      time.Time // zero when unknown
	MessageID string
	Subject   string // decoded for display
	From      string
}

// Hit is an Entry found by Search, with its group, and, when a query term
// matched its body, the stretch of the body around the first match.
type Hit struct {
	Group string
	Entry
	Snippet []Fragment
}

// Query says what Search looks for. Empty fields match everything.
type Query struct {
	Groups []string  // the groups searched; every indexed group when empty
	Text   string    // words and "phrases" that must each appear in the subject, author or indexed body
	Author string    // words that must each appear in the author
	Since  time.Time // dated at or after (zero: open)
	Until  time.Time // dated before (zero: open)
	Limit  int       // most hits returned; 100 when 0
	Offset int       // newest hits skipped before the Limit returned (paging)
}

// Result is what Search found: the newest Limit hits after the Offset
// newest, newest first, and
// how many matched in all. Approx is set when Total is a lower bound:
// more bodies held a phrase's words than a query reads to check them
// (maxPhraseReads).
type Result struct {
	Hits   []Hit
	Total  int
	Approx bool
}

// group is one group's table.
type group struct {
	name    string
	nums    []int64
	dates   []int64 // unix seconds; 0 when unknown
	ids     []string
	subj    []string
	from    []string
	hay     []string // folded subject + "\x00" + folded from
	order   []int32  // the rows by article number, ascending
	lo, hi  int64    // the range of article numbers covered; 0, 0 for none
	size    int64    // bytes in the file
	touched uint64
	body    *bodies // nil when no body is indexed

	// bodyPath names a body file LoadBodies has yet to read, of
	// bodyPending bytes.
	bodyPath    string
	bodyPending int64
}

// Index is the search index of a directory. Its methods are safe for
// concurrent use.
type Index struct {
	dir      string
	maxBytes int64

	mu     sync.RWMutex
	groups map[string]*group
	size   int64
	clock  uint64   // counts searches and appends, for least recently used
	damage []string // what Open found damaged, and what it lost
}

// Open reads every group's file in dir (created when missing), truncating
// a damaged tail. maxBytes bounds the files together (0: no bound).
func Open(dir string, maxBytes int64) (*Index, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("searchindex: %w", err)
	}
	ix := &Index{dir: dir, maxBytes: maxBytes, groups: make(map[string]*group)}
	names, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		return nil, fmt.Errorf("searchindex: %w", err)
	}
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), suffix)
		g, report, err := load(path, name)
		if err != nil {
			ix.Close()
			return nil, err
		}
		if report != "" {
			ix.damage = append(ix.damage, report)
		}
		ix.groups[name] = g
		ix.size += g.size
	}
	names, err = filepath.Glob(filepath.Join(dir, "*"+bodySuffix))
	if err != nil {
		ix.Close()
		return nil, fmt.Errorf("searchindex: %w", err)
	}
	for _, path := range names {
		g := ix.groups[strings.TrimSuffix(filepath.Base(path), bodySuffix)]
		if g == nil {
			// Its overview is gone (dropped by a crash between the two
			// removals): without it the records name no article.
			if err := os.Remove(path); err != nil {
				ix.Close()
				return nil, fmt.Errorf("searchindex: %w", err)
			}
			ix.damage = append(ix.damage, path+": no overview beside it: removed")
			continue
		}
		st, err := os.Stat(path)
		if err != nil {
			ix.Close()
			return nil, fmt.Errorf("searchindex: %w", err)
		}
		g.bodyPath, g.bodyPending = path, st.Size()
		ix.size += st.Size()
	}
	return ix, nil
}

// ErrBodiesLoading is returned by AppendBodies for a group whose body file
// LoadBodies has not read yet.
var ErrBodiesLoading = errors.New("searchindex: the group's bodies are not loaded yet")

// LoadBodies reads the body files Open found, one group at a time,
// without holding up searches (which find no body words in a group until
// its file is read; it takes about 0.1 s per 1,000 articles). Damage
// found is added to Damage. It returns ctx's error when ctx is done first,
// or the first file that could not be read (whose group then takes no
// more bodies).
func (ix *Index) LoadBodies(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ix.mu.RLock()
		var g *group
		for _, c := range ix.groups {
			if c.bodyPath != "" && (g == nil || c.name < g.name) {
				g = c
			}
		}
		var nums []int64
		var order []int32
		var path string
		if g != nil {
			// Rows are only ever appended: the ones there now stay as
			// they are while the file is read.
			nums, order, path = g.nums[:len(g.nums):len(g.nums)], slices.Clone(g.order), g.bodyPath
		}
		ix.mu.RUnlock()
		if g == nil {
			return nil
		}
		b, reports, err := loadBodies(path, len(nums), func(n int64) (int, bool) { return findRow(nums, order, n) })
		ix.mu.Lock()
		if ix.groups[g.name] != g || g.bodyPath != path {
			// Dropped meanwhile.
			if b != nil {
				b.file.Close()
			}
			ix.mu.Unlock()
			continue
		}
		if err != nil {
			ix.damage = append(ix.damage, fmt.Sprintf("%s: not read (%v): the group's bodies are not searchable", path, err))
			ix.mu.Unlock()
			return err
		}
		ix.damage = append(ix.damage, reports...)
		ix.size += b.size - g.bodyPending
		g.body, g.bodyPath, g.bodyPending = b, "", 0
		ix.mu.Unlock()
	}
}

// Damage returns what Open and LoadBodies found damaged in the files and
// what was lost, one sentence each; nil when nothing was.
func (ix *Index) Damage() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return slices.Clone(ix.damage)
}

// Close closes the files the index reads bodies from.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var errs []error
	for _, g := range ix.groups {
		if g.body != nil && g.body.file != nil {
			errs = append(errs, g.body.file.Close())
			g.body.file = nil
		}
	}
	return errors.Join(errs...)
}

// load reads one group's file, truncating it after the last good range
// record, which report describes ("" when nothing was cut).
func load(path, name string) (g *group, report string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, "", fmt.Errorf("searchindex: %w", err)
	}
	defer f.Close()
	g = &group{name: name}
	r := bufio.NewReaderSize(f, 256<<10)
	seen := map[int64]bool{}
	var off, good int64  // bytes read; bytes up to the last range record
	rows, ranges := 0, 0 // rows up to the last range record
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull || (err == nil && len(line) > maxRecord) {
			break // damage: no record is that long
		}
		if err != nil {
			if err != io.EOF {
				return nil, "", fmt.Errorf("searchindex: %s: %w", path, err)
			}
			break // an incomplete last record is absent
		}
		if lo, hi, ok := parseRange(line); ok {
			g.lo, g.hi = lo, hi
			off += int64(len(line))
			good, rows = off, len(g.nums)
			ranges++
			continue
		}
		e, ok := parseRecord(line)
		if !ok || seen[e.Number] {
			break
		}
		seen[e.Number] = true
		g.add(e)
		off += int64(len(line))
	}
	if ranges == 0 {
		// Written before range records: it covers what it holds.
		good, rows = off, len(g.nums)
		for _, n := range g.nums {
			g.lo, g.hi = min(cmp.Or(g.lo, n), n), max(g.hi, n)
		}
	}
	g.truncate(rows)
	g.sortOrder()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("searchindex: %w", err)
	}
	if st.Size() != good {
		report = fmt.Sprintf("%s: damaged at byte %d: %d bytes cut; articles outside %d-%d indexed again", path, good, st.Size()-good, g.lo, g.hi)
		if err := f.Truncate(good); err != nil {
			return nil, "", fmt.Errorf("searchindex: %s: truncating a damaged tail at %d: %w", path, good, err)
		}
		if err := f.Sync(); err != nil {
			return nil, "", fmt.Errorf("searchindex: %s: %w", path, err)
		}
	}
	g.size = good
	return g, report, nil
}

// clean makes a field storable: no TAB, CR or LF.
func clean(s string) string {
	if !strings.ContainsAny(s, "\t\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// appendRecord appends e's record to dst.
func appendRecord(dst []byte, e Entry) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, e.Number, 10)
	dst = append(dst, '\t')
	var d int64
	if !e.Date.IsZero() {
		d = e.Date.Unix()
	}
	dst = strconv.AppendInt(dst, d, 10)
	for _, s := range []string{e.MessageID, e.Subject, e.From} {
		dst = append(dst, '\t')
		dst = append(dst, clean(s)...)
	}
	return appendSum(dst, start)
}

// appendSum ends the record begun at dst[start:] with its checksum and LF.
func appendSum(dst []byte, start int) []byte {
	return fmt.Appendf(dst, "\t%08x\n", crc32.ChecksumIEEE(dst[start:]))
}

// checkedFields splits a record line (with its LF) into its fields before
// the checksum; ok is false when the checksum is missing or wrong.
func checkedFields(line []byte) ([]string, bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndexByte(line, '\t')
	if i < 0 || len(line)-i-1 != 8 {
		return nil, false
	}
	sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
	if err != nil || uint32(sum) != crc32.ChecksumIEEE(line[:i]) {
		return nil, false
	}
	return strings.Split(string(line[:i]), "\t"), true
}

// parseRecord reads one record line (with its LF); ok is false for a
// damaged one.
func parseRecord(line []byte) (Entry, bool) {
	f, ok := checkedFields(line)
	if !ok || len(f) != 5 {
		return Entry{}, false
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	d, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || n <= 0 {
		return Entry{}, false
	}
	e := Entry{Number: n, MessageID: f[2], Subject: f[3], From: f[4]}
	if d != 0 {
		e.Date = time.Unix(d, 0).UTC()
	}
	return e, true
}

// appendRange appends the range record of [lo, hi] to dst.
func appendRange(dst []byte, lo, hi int64) []byte {
	start := len(dst)
	dst = append(dst, "R\t"...)
	dst = strconv.AppendInt(dst, lo, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, hi, 10)
	return appendSum(dst, start)
}

// parseRange reads a range record line (with its LF); ok is false when
// line is not an intact one.
func parseRange(line []byte) (lo, hi int64, ok bool) {
	if !bytes.HasPrefix(line, []byte("R\t")) {
		return 0, 0, false
	}
	f, ok := checkedFields(line)
	if !ok || len(f) != 3 {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(f[1], 10, 64)
	hi, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || lo <= 0 || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// add appends e's row to the table; order is brought up to date by
// sortOrder or merge.
func (g *group) add(e Entry) {
	var d int64
	if !e.Date.IsZero() {
		d = e.Date.Unix()
	}
	g.nums = append(g.nums, e.Number)
	g.dates = append(g.dates, d)
	g.ids = append(g.ids, e.MessageID)
	g.subj = append(g.subj, e.Subject)
	g.from = append(g.from, e.From)
	g.hay = append(g.hay, fold(e.Subject)+"\x00"+fold(e.From))
}

// truncate drops the rows from n on.
func (g *group) truncate(n int) {
	g.nums, g.dates, g.ids, g.subj, g.from, g.hay = g.nums[:n], g.dates[:n], g.ids[:n], g.subj[:n], g.from[:n], g.hay[:n]
}

// sortOrder sorts every row into order.
func (g *group) sortOrder() {
	g.order = make([]int32, len(g.nums))
	for i := range g.order {
		g.order[i] = int32(i)
	}
	slices.SortFunc(g.order, func(a, b int32) int { return cmp.Compare(g.nums[a], g.nums[b]) })
}

// merge adds the rows from first on (ascending numbers, none in order
// yet) to order.
func (g *group) merge(first int) {
	old := g.order
	out := make([]int32, 0, len(g.nums))
	i, j := 0, first
	for i < len(old) || j < len(g.nums) {
		if j == len(g.nums) || (i < len(old) && g.nums[old[i]] < g.nums[j]) {
			out = append(out, old[i])
			i++
		} else {
			out = append(out, int32(j))
			j++
		}
	}
	g.order = out
}

// find returns the row of article number.
func (g *group) find(number int64) (row int, ok bool) {
	return findRow(g.nums, g.order, number)
}

// findRow looks number up in rows nums sorted by order.
func findRow(nums []int64, order []int32, number int64) (row int, ok bool) {
	k, ok := slices.BinarySearchFunc(order, number, func(r int32, n int64) int { return cmp.Compare(nums[r], n) })
	if !ok {
		return 0, false
	}
	return int(order[k]), true
}

// High is the top of group's indexed range: its highest article number
// covered (0 when it has none), where indexing goes on upward from.
func (ix *Index) High(group string) int64 {
	_, hi := ix.Range(group)
	return hi
}

// Range is the range of group's article numbers the index covers: every
// article of the group numbered lo to hi is in it. 0, 0 when none is.
func (ix *Index) Range(group string) (lo, hi int64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if g := ix.groups[group]; g != nil {
		return g.lo, g.hi
	}
	return 0, 0
}

// Len is the number of articles indexed for group.
func (ix *Index) Len(group string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if g := ix.groups[group]; g != nil {
		return len(g.nums)
	}
	return 0
}

// Size is the bytes the index files take together.
func (ix *Index) Size() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.size
}

// ErrBadGroup is returned for a group name that cannot name a file.
var ErrBadGroup = errors.New("searchindex: group name cannot name a file")

// Append adds entries as AppendRange does, covering the range from the
// lowest to the highest of them.
func (ix *Index) Append(name string, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	lo, hi := entries[0].Number, entries[0].Number
	for _, e := range entries {
		lo, hi = min(lo, e.Number), max(hi, e.Number)
	}
	return ix.AppendRange(name, lo, hi, entries)
}

// AppendRange adds entries, every article of group numbered lo to hi
// (any order; those outside the range or indexed already are left out),
// and makes them and the range durable before it returns. The group's
// range becomes the one from the lowest to the highest of its range and
// [lo, hi]; the caller makes them meet or overlap. Then, if the index
// passed MaxBytes, the least recently used other groups are dropped.
func (ix *Index) AppendRange(name string, lo, hi int64, entries []Entry) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name[0] == '.' {
		return fmt.Errorf("%w: %q", ErrBadGroup, name)
	}
	if lo <= 0 || hi < lo {
		return fmt.Errorf("searchindex: %s: bad range %d-%d", name, lo, hi)
	}
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Number, b.Number) })
	ix.mu.Lock()
	defer ix.mu.Unlock()
	g := ix.groups[name]
	if g == nil {
		g = &group{name: name}
	}
	var buf []byte
	var add []Entry
	for i, e := range entries {
		if e.Number < lo || e.Number > hi || (i > 0 && e.Number == entries[i-1].Number) {
			continue
		}
		if _, ok := g.find(e.Number); ok {
			continue
		}
		buf = appendRecord(buf, e)
		add = append(add, e)
	}
	nlo, nhi := lo, hi
	if g.hi > 0 {
		nlo, nhi = min(g.lo, lo), max(g.hi, hi)
	}
	if len(add) == 0 && nlo == g.lo && nhi == g.hi {
		return nil
	}
	buf = appendRange(buf, nlo, nhi)
	if err := appendDurable(filepath.Join(ix.dir, name+suffix), g.size, buf); err != nil {
		return err
	}
	first := len(g.nums)
	for _, e := range add {
		g.add(e)
	}
	g.merge(first)
	g.lo, g.hi = nlo, nhi
	g.size += int64(len(buf))
	ix.size += int64(len(buf))
	ix.clock++
	g.touched = ix.clock
	ix.groups[name] = g
	return ix.evict(name)
}

// evict drops the least recently used groups other than keep while the
// index is over its bound. ix.mu is held.
func (ix *Index) evict(keep string) error {
	for ix.maxBytes > 0 && ix.size > ix.maxBytes {
		var victim *group
		for _, g := range ix.groups {
			if g.name != keep && (victim == nil || g.touched < victim.touched) {
				victim = g
			}
		}
		if victim == nil {
			return nil // the one group is all there is: it stays
		}
		// The bodies first: a crash between the two leaves an overview
		// without bodies, which is whole, rather than bodies without an
		// overview.
		// Loaded or still to be read, they are the one file.
		if b := victim.body; b != nil || victim.bodyPath != "" {
			if b != nil && b.file != nil {
				b.file.Close()
			}
			if err := os.Remove(filepath.Join(ix.dir, victim.name+bodySuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("searchindex: dropping %s: %w", victim.name, err)
			}
			if b != nil {
				ix.size -= b.size
			}
			ix.size -= victim.bodyPending
			victim.body, victim.bodyPath, victim.bodyPending = nil, "", 0
		}
		if err := os.Remove(filepath.Join(ix.dir, victim.name+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("searchindex: dropping %s: %w", victim.name, err)
		}
		ix.size -= victim.size
		delete(ix.groups, victim.name)
	}
	return nil
}

// Groups lists the indexed groups, sorted.
func (ix *Index) Groups() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]string, 0, len(ix.groups))
	for name := range ix.groups {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// words splits a query into folded words.
func words(s string) []string { return strings.Fields(fold(s)) }

// maxPhraseReads bounds the bodies one query reads back to check that a
// phrase's words are adjacent; past it, Result.Approx is set and the
// articles left unchecked are not counted.
const maxPhraseReads = 1000

// Search returns the newest hits of q (see Query), newest first.
func (ix *Index) Search(q Query) Result {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Offset = max(q.Offset, 0)
	want := q.Offset + q.Limit // hits kept per group: the page and all above it
	terms, author := parseTerms(q.Text), words(q.Author)
	var since, until int64 = 0, 0
	if !q.Since.IsZero() {
		since = q.Since.Unix()
	}
	if !q.Until.IsZero() {
		until = q.Until.Unix()
	}
	ix.mu.Lock()
	ix.clock++
	var gs []*group
	if len(q.Groups) == 0 {
		for _, g := range ix.groups {
			gs = append(gs, g)
		}
	} else {
		for _, name := range q.Groups {
			if g := ix.groups[name]; g != nil {
				gs = append(gs, g)
			}
		}
	}
	for _, g := range gs {
		g.touched = ix.clock
	}
	ix.mu.Unlock()

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s := &scan{terms: terms, author: author, since: since, until: until, reads: maxPhraseReads}
	var res Result
	for _, g := range gs {
		s.group(g)
		taken := 0
		for k := len(g.order) - 1; k >= 0; k-- {
			i := int(g.order[k])
			m, text := s.match(g, i)
			if m == noMatch {
				continue
			}
			if m == unchecked {
				res.Approx = true
				continue
			}
			res.Total++
			if taken < want {
				taken++
				h := Hit{Group: g.name, Entry: g.entry(i)}
				if m == bodyMatch {
					if text == nil { // not read for a phrase
						text, _ = g.body.text(i)
					}
					if text != nil {
						h.Snippet = snippet(text, terms)
					}
				}
				res.Hits = append(res.Hits, h)
			}
		}
	}
	slices.SortStableFunc(res.Hits, func(a, b Hit) int {
		if c := b.Date.Compare(a.Date); c != 0 {
			return c
		}
		return strings.Compare(a.Group, b.Group)
	})
	res.Hits = res.Hits[min(q.Offset, len(res.Hits)):min(want, len(res.Hits))]
	return res
}

// verdict is how a row matched a query.
type verdict int

const (
	noMatch      verdict = iota
	overviewOnly         // every term in the subject or author
	bodyMatch            // some term only in the body
	unchecked            // a phrase's words in the body, adjacency not checked (out of reads)
)

// scan is one query's matching state.
type scan struct {
	terms        []term
	author       []string
	since, until int64
	reads        int // phrase checks left

	// Per group: for each term, the rows whose body holds all its words
	// (nil when the group has no bodies).
	sets [][]uint64
}

// group prepares the scan of g: each term's body rows.
func (s *scan) group(g *group) {
	s.sets = s.sets[:0]
	if g.body == nil {
		return
	}
	for _, t := range s.terms {
		s.sets = append(s.sets, g.body.rows(t.words, len(g.nums)))
	}
}

// rows returns the set of rows (a bitmap of n bits) whose body holds every
// word; nil when none can.
func (b *bodies) rows(words []string, n int) []uint64 {
	if len(words) == 0 {
		return nil
	}
	var set []uint64
	for k, w := range words {
		p := b.words[w]
		if p == nil {
			return nil
		}
		next := make([]uint64, (n+63)/64)
		p.each(func(row int32) {
			if int(row) < n && (k == 0 || set[row/64]&(1<<(row%64)) != 0) {
				next[row/64] |= 1 << (row % 64)
			}
		})
		set = next
	}
	return set
}

// match decides row i of g. It returns the row's body text when it read
// it to check a phrase (the snippet is cut from it), else nil.
func (s *scan) match(g *group, i int) (verdict, []byte) {
	d := g.dates[i]
	if (s.since != 0 && d < s.since) || (s.until != 0 && (d == 0 || d >= s.until)) {
		return noMatch, nil
	}
	hay := g.hay[i]
	if len(s.author) > 0 {
		from := hay[strings.IndexByte(hay, 0)+1:]
		for _, w := range s.author {
			if !strings.Contains(from, w) {
				return noMatch, nil
			}
		}
	}
	v := overviewOnly
	var text []byte // read once, for phrases
	for k, t := range s.terms {
		if strings.Contains(hay, t.text) {
			continue
		}
		if k >= len(s.sets) || s.sets[k] == nil || s.sets[k][i/64]&(1<<(i%64)) == 0 {
			return noMatch, nil
		}
		v = bodyMatch
		if len(t.words) < 2 {
			continue
		}
		if text == nil {
			if s.reads <= 0 {
				return unchecked, nil
			}
			s.reads--
			var ok bool
			if text, ok = g.body.text(i); !ok {
				return noMatch, nil
			}
		}
		if !hasPhrase(text, t) {
			return noMatch, nil
		}
	}
	return v, text
}

func (g *group) entry(i int) Entry {
	e := Entry{Number: g.nums[i], MessageID: g.ids[i], Subject: g.subj[i], From: g.from[i]}
	if g.dates[i] != 0 {
		e.Date = time.Unix(g.dates[i], 0).UTC()
	}
	return e
}

// appendDurable appends buf to the file at path, which holds size octets
// of good records, and fsyncs it. A write that fails part way is cut off
// again now (a part written is a damaged tail; the next Open would cut it
// too).
func appendDurable(path string, size int64, buf []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("searchindex: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		os.Truncate(path, size)
		return fmt.Errorf("searchindex: appending to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("searchindex: %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("searchindex: %s: %w", path, err)
	}
	return nil
}
