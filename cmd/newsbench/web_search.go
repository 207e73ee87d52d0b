package main

// newsbench web-search: newsweb's body search (search_bodies) over an
// index of n articles with bodies, in this process (spoolfs/searchindex),
// beside newsbench web's subject and author figure:
//
//  1. indexing: the bodies appended 100 at a time with one fsync each, as
//     newsweb's body pass appends them (the fetching is not timed: it is
//     one ARTICLE per body at the servers' pace);
//  2. loading: Open and LoadBodies, what a restart costs before bodies
//     are searchable, and the heap the loaded index holds;
//  3. queries: p50/p95 of a reader-like mix (a rare word, a common one,
//     two words, a phrase, a word and an author, a word found nowhere,
//     words across groups with a date).
//
// Bodies are about 150 words drawn with Zipf frequencies from a
// vocabulary of 30,000 (the shape of natural text). Lines "result
// web_search <metric> <value>" follow the table.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/newsflow/newsflow/spoolfs/searchindex"
)

func init() {
	register("web-search", "newsweb: body (full-text) search over 100,000 indexed articles: p50/p95, indexing, loading, size", benchWebSearch)
}

func benchWebSearch(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench web-search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("articles", 100_000, "articles with bodies in the index")
	queries := fs.Int("queries", 200, "queries timed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "newsbench-web-search")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const group = "bench.bodies"
	ix, err := searchindex.Open(dir, 0)
	if err != nil {
		return err
	}
	t0 := time.Now()
	vocab, err := searchindex.FillSample(ix, group, *n, sampleStart)
	if err != nil {
		return err
	}
	indexTime := time.Since(t0)
	if err := ix.Close(); err != nil {
		return err
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 = time.Now()
	ix, err = searchindex.Open(dir, 0)
	if err != nil {
		return err
	}
	defer ix.Close()
	if err := ix.LoadBodies(context.Background()); err != nil {
		return err
	}
	loadTime := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	st, err := os.Stat(filepath.Join(dir, group+".body"))
	if err != nil {
		return err
	}

	qs := searchindex.SampleQueries(group, vocab, sampleStart)
	lat := make([]time.Duration, 0, *queries)
	for i := range *queries {
		t := time.Now()
		ix.Search(qs[i%len(qs)])
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	p50, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)

	fmt.Fprintf(stdout, "body search: %d articles of about 150 words (Zipf over 30,000 words) in one group, spoolfs/searchindex in this process\n\n", *n)
	t := Table{Header: []string{"measure", "value"}}
	t.Add("indexing (append 100 with one fsync, text and words)", fmt.Sprintf("%v (%.0f articles/s)", indexTime.Round(time.Millisecond), float64(*n)/indexTime.Seconds()))
	t.Add("loading after a restart (Open + LoadBodies)", loadTime.Round(time.Millisecond).String())
	t.Add("body file", fmt.Sprintf("%.1f MB (%d bytes an article)", float64(st.Size())/1e6, st.Size()/int64(*n)))
	t.Add("heap of the loaded index (overview and words)", fmt.Sprintf("%.1f MB", float64(heap)/1e6))
	t.Add(fmt.Sprintf("body search, %d queries: p50 / p95", *queries), fmt.Sprintf("%v / %v", p50.Round(time.Microsecond), p95.Round(time.Microsecond)))
	t.Print(stdout)
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "result web_search body_p50_us %d\n", p50.Microseconds())
	fmt.Fprintf(stdout, "result web_search body_p95_us %d\n", p95.Microseconds())
	fmt.Fprintf(stdout, "result web_search index_articles_per_s %.0f\n", float64(*n)/indexTime.Seconds())
	fmt.Fprintf(stdout, "result web_search load_ms %d\n", loadTime.Milliseconds())
	fmt.Fprintf(stdout, "result web_search body_bytes_per_article %d\n", st.Size()/int64(*n))
	fmt.Fprintf(stdout, "result web_search heap_bytes %d\n", heap)
	fmt.Fprintf(stdout, "result web_search load_average %q\n", loadAverage())
	return nil
}

// sampleStart is the date of the first generated article.
var sampleStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
