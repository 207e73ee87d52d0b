package main

// The article set of newsbench feed: n generated articles of about the
// same size, which share one body (only their headers differ), so that a
// set of 2,000 x 500 KB costs 500 KB of memory and not 1 GB. The same
// articles go to every feeder: into newsfeed's spool (an rnews batch on
// inject's stdin) and into INN's (TAKETHIS to innd).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// articleSet is one generated set.
type articleSet struct {
	label string // "2k", "500k": names the cases
	size  int    // the target size of each article, in octets (wire form)
	ids   []string
	heads [][]byte // wire form (CRLF) header block of each article, blank line included
	body  []byte   // wire form body shared by all, CRLF, no line starting with '.'
	group string
}

// sizeLabel names a size: 2048 -> "2k", 512000 -> "500k", 700 -> "700b".
func sizeLabel(size int) string {
	switch {
	case size >= 1<<20 && size%(1<<20) == 0:
		return strconv.Itoa(size>>20) + "m"
	case size >= 1024 && size%1024 == 0:
		return strconv.Itoa(size>>10) + "k"
	case size >= 1000 && size%1000 == 0:
		return strconv.Itoa(size/1000) + "k"
	}
	return strconv.Itoa(size) + "b"
}

// bodyLine is the body's text: 72 characters and CRLF.
const bodyLine = "The quick brown fox jumps over the lazy dog; newsbench feed test data 01\r\n"

// newArticleSet generates n articles of about size octets each (wire form,
// without the terminating ".\r\n"). run makes the message-ids unique to
// this run of newsbench.
func newArticleSet(n, size int, run string, date time.Time) *articleSet {
	s := &articleSet{label: sizeLabel(size), size: size, group: "misc.test"}
	for i := range n {
		id := fmt.Sprintf("<%d.%s.%s@newsbench.invalid>", i, s.label, run)
		h := fmt.Sprintf("Path: origin.invalid!not-for-mail\r\n"+
			"From: newsbench <bench@origin.invalid>\r\n"+
			"Newsgroups: %s\r\n"+
			"Subject: newsbench %s article %d\r\n"+
			"Date: %s\r\n"+
			"Message-ID: %s\r\n"+
			"\r\n", s.group, s.label, i, date.UTC().Format(time.RFC1123Z), id)
		s.ids = append(s.ids, id)
		s.heads = append(s.heads, []byte(h))
	}
	head := 0
	if n > 0 {
		head = len(s.heads[0])
	}
	lines := max((size-head)/len(bodyLine), 1)
	s.body = []byte(strings.Repeat(bodyLine, lines))
	return s
}

// len is the number of articles.
func (s *articleSet) len() int { return len(s.ids) }

// wireBytes is the total size of the set in wire form (without
// terminators).
func (s *articleSet) wireBytes() int64 {
	var n int64
	for _, h := range s.heads {
		n += int64(len(h) + len(s.body))
	}
	return n
}

var terminator = []byte(".\r\n")

// takethisStream returns the TAKETHIS stream of articles i = first,
// first+step, ... as buffers for one writev each call: command line and
// header block in one buffer, then the shared body and terminator.
func (s *articleSet) takethisStream(first, step int) net.Buffers {
	var bufs net.Buffers
	for i := first; i < s.len(); i += step {
		b := make([]byte, 0, len(s.ids[i])+12+len(s.heads[i]))
		b = append(b, "TAKETHIS "...)
		b = append(b, s.ids[i]...)
		b = append(b, "\r\n"...)
		b = append(b, s.heads[i]...)
		bufs = append(bufs, b, s.body, terminator)
	}
	return bufs
}

// writeRnews writes the set as an rnews batch (native form: LF line ends):
// what `newsfeed inject` reads.
func (s *articleSet) writeRnews(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	native := func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "\r\n", "\n")) }
	body := native(s.body)
	for _, h := range s.heads {
		nh := native(h)
		fmt.Fprintf(bw, "#! rnews %d\n", len(nh)+len(body))
		bw.Write(nh)
		if _, err := bw.Write(body); err != nil {
			return err
		}
	}
	return bw.Flush()
}
