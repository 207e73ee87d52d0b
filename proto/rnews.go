package proto

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// An rnews batch (rnews(1), INN's batcher) is a sequence of articles in
// native form, each preceded by a line "#! rnews N" where N is the exact
// number of octets of the article that follows:
//
//	#! rnews 123\n<123 octets of article>#! rnews 456\n<456 octets>...
//
// Compressed batches start with "#! cunbatch" or "#! gunbatch" and must be
// decompressed before reading.

// DefaultMaxRnewsArticle is the default largest article an RnewsReader
// accepts, in octets.
const DefaultMaxRnewsArticle = 64 << 20

// maxRnewsHeaderLine bounds the "#! rnews N" line, CR LF included.
const maxRnewsHeaderLine = 128

// ErrRnewsTooLarge is wrapped when an article's announced size is over the
// reader's limit.
var ErrRnewsTooLarge = errors.New("rnews: article larger than the limit")

var rnewsMagic = []byte("#! rnews ")

// IsRnewsBatch reports whether data starting with prefix is an rnews batch
// (it begins "#! rnews "); otherwise the file is taken as a single plain
// article. Eight octets are enough to decide ("#! rnews" without the space
// is also taken as a batch, to give a clear error later).
func IsRnewsBatch(prefix []byte) bool {
	n := min(len(prefix), len(rnewsMagic))
	return n >= len("#! rnews") && bytes.Equal(prefix[:n], rnewsMagic[:n])
}

// An RnewsReader reads the articles of an rnews batch one at a time. It
// never skips input: anything that is not a well-formed batch stops it with
// an error naming the offset, and the error is returned again by every later
// call.
type RnewsReader struct {
	r        *bufio.Reader
	max      int
	off      int64 // octets consumed so far
	headers  int64 // octets of "#! rnews" lines consumed
	err      error
	articles int
}

// NewRnewsReader returns a reader of the batch in r that refuses articles
// larger than maxArticle octets (0 means DefaultMaxRnewsArticle).
func NewRnewsReader(r io.Reader, maxArticle int) *RnewsReader {
	if maxArticle <= 0 {
		maxArticle = DefaultMaxRnewsArticle
	}
	return &RnewsReader{r: bufio.NewReaderSize(r, 4096), max: maxArticle}
}

// Offset returns how many octets of the batch have been consumed: after a
// clean io.EOF, all of it, and exactly the sum of HeaderBytes and the
// lengths of the articles returned.
func (r *RnewsReader) Offset() int64 { return r.off }

// HeaderBytes returns how many octets of "#! rnews N" lines have been read.
func (r *RnewsReader) HeaderBytes() int64 { return r.headers }

// Next returns the next article (a new slice the caller owns), or io.EOF
// after the last. An article is returned only when the next "#! rnews N"
// line, or the end of the batch, follows its N octets exactly. Errors: an
// article whose N octets end anywhere else (a wrong N: the article is not
// returned), a line other than "#! rnews N" where an article
// must start (the octets there are quoted), N above the limit (wrapping
// ErrRnewsTooLarge), and a batch that ends inside an article; in the last
// case the partial article is returned with the error so it can be kept
// aside rather than lost.
func (r *RnewsReader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	art, err := r.next()
	if err != nil {
		r.err = err
	}
	return art, err
}

func (r *RnewsReader) next() ([]byte, error) {
	start := r.off
	line, err := r.headerLine()
	if err != nil {
		return nil, err
	}
	n, err := parseRnewsHeader(line)
	if err != nil {
		return nil, fmt.Errorf("rnews: offset %d: %w", start, err)
	}
	if n > r.max {
		return nil, fmt.Errorf("rnews: offset %d: article of %d octets, limit %d: %w", start, n, r.max, ErrRnewsTooLarge)
	}
	r.off += int64(len(line))
	r.headers += int64(len(line))
	// Grow as data arrives rather than trusting N for the allocation.
	art := make([]byte, 0, min(n, 1<<20))
	for len(art) < n {
		if len(art) == cap(art) {
			art = append(art, 0)[:len(art)]
		}
		m, err := r.r.Read(art[len(art):min(cap(art), n)])
		art = art[:len(art)+m]
		r.off += int64(m)
		if err == io.EOF || (err == nil && m == 0) {
			if err == nil {
				continue
			}
			return art, fmt.Errorf("rnews: offset %d: article %d truncated: %d of %d octets: %w", start, r.articles+1, len(art), n, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return art, fmt.Errorf("rnews: offset %d: reading article: %w", start, err)
		}
	}
	// A wrong N is caught here: the article must end exactly where the
	// next "#! rnews" line (or the batch) begins. Otherwise its octets are
	// a cut-off article or one with the next entry inside, and neither it
	// nor anything after it can be trusted.
	next, err := r.r.Peek(len(rnewsMagic))
	switch {
	case len(next) == 0 && err == io.EOF:
	case bytes.Equal(next, rnewsMagic):
	case len(next) < len(rnewsMagic) && err != io.EOF:
		return nil, fmt.Errorf("rnews: offset %d: after article %d: %w", r.off, r.articles+1, err)
	default:
		return nil, fmt.Errorf("rnews: offset %d: article %d announced as %d octets does not end where the next \"#! rnews N\" line or the batch does (found %q at offset %d): the batch is refused from this article on", start, r.articles+1, n, clip(next), r.off)
	}
	r.articles++
	return art, nil
}

// headerLine reads the line where an article must start, or returns io.EOF
// at a clean end of the batch.
func (r *RnewsReader) headerLine() ([]byte, error) {
	p, err := r.r.Peek(maxRnewsHeaderLine)
	if len(p) == 0 {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("rnews: offset %d: %w", r.off, err)
	}
	if !bytes.HasPrefix(p, rnewsMagic[:min(len(p), len(rnewsMagic))]) || len(p) < len(rnewsMagic) {
		what := "garbage"
		if r.articles == 0 {
			what = "not an rnews batch"
		}
		if bytes.HasPrefix(p, []byte("#! cunbatch")) || bytes.HasPrefix(p, []byte("#! gunbatch")) {
			what = "compressed batch (decompress it first)"
		}
		return nil, fmt.Errorf("rnews: offset %d: %s where \"#! rnews N\" should start article %d: %q", r.off, what, r.articles+1, clip(p))
	}
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, fmt.Errorf("rnews: offset %d: %w", r.off, err)
		}
		return nil, fmt.Errorf("rnews: offset %d: \"#! rnews\" line not ended by LF within %d octets: %q", r.off, maxRnewsHeaderLine, clip(p))
	}
	line := make([]byte, i+1)
	copy(line, p)
	if _, err := r.r.Discard(i + 1); err != nil {
		return nil, fmt.Errorf("rnews: offset %d: %w", r.off, err)
	}
	return line, nil
}

// parseRnewsHeader parses "#! rnews N" with its LF (a CR before it, and
// extra spaces or tabs around N, are tolerated).
func parseRnewsHeader(line []byte) (int, error) {
	s := string(TrimEOL(line))
	f := fields(s[len(rnewsMagic)-1:])
	if len(f) != 1 {
		return 0, fmt.Errorf("bad rnews line %q: want \"#! rnews N\"", clipS(s))
	}
	n, err := strconv.ParseUint(f[0], 10, 31)
	if err != nil {
		return 0, fmt.Errorf("bad rnews line %q: size is not a number below 2^31", clipS(s))
	}
	return int(n), nil
}

// AppendRnews appends article to dst as one batch entry: "#! rnews N\n"
// and the article's octets.
func AppendRnews(dst, article []byte) []byte {
	dst = append(dst, rnewsMagic...)
	dst = strconv.AppendInt(dst, int64(len(article)), 10)
	dst = append(dst, '\n')
	return append(dst, article...)
}

// An RnewsWriter writes an rnews batch to w, one article per Write.
type RnewsWriter struct {
	w   io.Writer
	buf []byte
}

// NewRnewsWriter returns a writer of a batch to w.
func NewRnewsWriter(w io.Writer) *RnewsWriter { return &RnewsWriter{w: w} }

// WriteArticle writes one entry: the "#! rnews N" line and the article.
func (w *RnewsWriter) WriteArticle(article []byte) error {
	w.buf = strconv.AppendInt(append(w.buf[:0], rnewsMagic...), int64(len(article)), 10)
	w.buf = append(w.buf, '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("rnews: write: %w", err)
	}
	if _, err := w.w.Write(article); err != nil {
		return fmt.Errorf("rnews: write: %w", err)
	}
	return nil
}
