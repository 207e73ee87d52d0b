package searchindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
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
