package searchindex

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// FillSample indexes n generated articles of group, for benchmarks (its
// Go benchmark and newsbench's): subjects, authors and bodies of about 150
// words drawn from a Zipf-distributed vocabulary of 30,000 words (the
// shape of natural text: a few words everywhere, most rare), one a minute
// from start, the bodies appended 100 at a time as newsweb does, one
// fsync each. It returns the vocabulary, most frequent first. The same n
// and start give the same articles.
func FillSample(ix *Index, group string, n int, start time.Time) ([]string, error) {
	r := rand.New(rand.NewPCG(3, 4))
	syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "qua", "bel", "dor", "fin", "gar"}
	vocab := make([]string, 30_000)
	seen := map[string]bool{}
	for i := range vocab {
		for {
			w := ""
			for range 2 + r.IntN(3) {
				w += syll[r.IntN(len(syll))]
			}
			if !seen[w] {
				seen[w], vocab[i] = true, w
				break
			}
		}
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.1, 2, uint64(len(vocab)-1))
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Number: int64(i + 1), Date: start.Add(time.Duration(i) * time.Minute), MessageID: fmt.Sprintf("<%d@sample.example>", i),
			Subject: "subject " + vocab[zipf.Uint64()], From: fmt.Sprintf("Poster %d <p%d@example.org>", r.IntN(5000), r.IntN(5000))}
	}
	if err := ix.Append(group, es); err != nil {
		return nil, err
	}
	var text []byte
	for lo := 0; lo < n; lo += 100 {
		batch := make([]Body, 0, 100)
		for i := lo; i < min(lo+100, n); i++ {
			text = text[:0]
			for k := range 100 + r.IntN(100) {
				if k > 0 && k%12 == 0 {
					text = append(text, ".\n"...)
				}
				text = append(text, vocab[zipf.Uint64()]...)
				text = append(text, ' ')
			}
			batch = append(batch, Body{Number: int64(i + 1), Text: string(text)})
		}
		if err := ix.AppendBodies(group, batch); err != nil {
			return nil, err
		}
	}
	return vocab, nil
}

// SampleQueries is the query mix the benchmarks time over a FillSample
// group: a rare word, a common one, two words, a phrase of common words,
// a word and an author, a word found nowhere, and two words across all
// groups since ten days after start.
func SampleQueries(group string, vocab []string, start time.Time) []Query {
	g := []string{group}
	return []Query{
		{Groups: g, Text: vocab[5000]},
		{Groups: g, Text: vocab[3]},
		{Groups: g, Text: vocab[40] + " " + vocab[300]},
		{Groups: g, Text: `"` + vocab[2] + " " + vocab[3] + `"`},
		{Groups: g, Text: vocab[100], Author: "poster 42"},
		{Groups: g, Text: "nothingmatches"},
		{Text: vocab[1000] + " " + vocab[20], Since: start.Add(10 * 24 * time.Hour)},
	}
}
