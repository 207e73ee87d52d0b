package searchindex

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkSearch searches one group of 100,000 articles (the goal: p95
// under 200 ms) with the queries a reader types: a word, two words, an
// author, and a date range. It reports the p95 of single queries.
func BenchmarkSearch(b *testing.B) {
	const n = 100_000
	ix := open(b, b.TempDir(), 0)
	r := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"generics", "channels", "release", "question", "help", "linux", "kernel", "compiler",
		"performance", "memory", "network", "error", "patch", "review", "proposal", "bug", "test", "build"}
	es := make([]Entry, n)
	for i := range es {
		subj := ""
		for range 3 + r.IntN(5) {
			subj += vocab[r.IntN(len(vocab))] + " "
		}
		if r.IntN(3) == 0 {
			subj = "Re: " + subj
		}
		es[i] = Entry{Number: int64(i + 1), Date: day0.Add(time.Duration(i) * time.Minute), MessageID: fmt.Sprintf("<%d.%d@bench.example>", i, r.Int()),
			Subject: subj, From: fmt.Sprintf("Poster %d <p%d@example.org>", r.IntN(5000), r.IntN(5000))}
	}
	if err := ix.Append("bench.group", es); err != nil {
		b.Fatal(err)
	}
	queries := []Query{
		{Groups: []string{"bench.group"}, Text: "kernel"},
		{Groups: []string{"bench.group"}, Text: "memory patch"},
		{Groups: []string{"bench.group"}, Author: "poster 42"},
		{Groups: []string{"bench.group"}, Text: "nothingmatches"},
		{Text: "review", Since: day0.Add(30 * 24 * time.Hour), Until: day0.Add(40 * 24 * time.Hour)},
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		ix.Search(queries[i%len(queries)])
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkBodySearch searches the bodies of one group of 100,000
// articles (the goal: p95 under 200 ms) with a mix of queries: a rare
// word, a common one, two words, a phrase of common words, a word and an
// author, a word found nowhere. It reports the p50 and p95 of single
// queries of the mix, the time the 100,000 bodies took to index (append
// with fsync every 100) and to read back (Open and LoadBodies), and the
// bytes of the body file per article.
func BenchmarkBodySearch(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	ix := open(b, dir, 0)
	t0 := time.Now()
	vocab, err := FillSample(ix, "bench.group", n, day0)
	if err != nil {
		b.Fatal(err)
	}
	indexTime := time.Since(t0)
	ix.Close()
	t0 = time.Now()
	ix = open(b, dir, 0)
	openTime := time.Since(t0)
	defer ix.Close()
	st, err := os.Stat(filepath.Join(dir, "bench.group.body"))
	if err != nil {
		b.Fatal(err)
	}
	queries := SampleQueries("bench.group", vocab, day0)
	b.Run("mix", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t := time.Now()
			ix.Search(queries[i%len(queries)])
			lat = append(lat, time.Since(t))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		b.ReportMetric(indexTime.Seconds(), "index-s")
		b.ReportMetric(openTime.Seconds(), "open-s")
		b.ReportMetric(float64(st.Size())/n, "disk-B/article")
	})
	for i, q := range queries {
		b.Run(fmt.Sprintf("q%d", i), func(b *testing.B) {
			var r Result
			for b.Loop() {
				r = ix.Search(q)
			}
			b.ReportMetric(float64(r.Total), "hits")
		})
	}
}

// BenchmarkPhrase checks a two-word phrase absent from a 1.3 KB body, the
// work of a phrase query per candidate article: hasPhrase, and findTerms
// (which also finds spans, for snippets) for comparison.
func BenchmarkPhrase(b *testing.B) {
	text := []byte(strings.Repeat("kalo mine rusa tovi zepo quabel dorfin garka. ", 30))
	tm := term{text: "mine kalo", words: []string{"mine", "kalo"}}
	b.Run("hasPhrase", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if hasPhrase(text, tm) {
				b.Fatal("found")
			}
		}
	})
	b.Run("findTerms", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if len(findTerms(text, []term{tm}, true)) > 0 {
				b.Fatal("found")
			}
		}
	})
}
