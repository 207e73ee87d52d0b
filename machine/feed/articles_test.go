package feed

import (
	"fmt"
	"strings"
)

// innArticle is a test article that real servers (INN) accept: valid
// headers, an old fixed Date (INN runs with artcutoff 0), a dot-stuffed
// line, in wire form.
type innArticle struct {
	Article
	wire []byte
}

// innArticles returns n articles with stable message-ids and tokens, so a
// recorded session replays against the same articles.
func innArticles(n int) []innArticle {
	out := make([]innArticle, n)
	for i := range out {
		id := fmt.Sprintf("<feed-%d@newsflow.invalid>", i)
		var b strings.Builder
		fmt.Fprintf(&b, "Path: upstream.invalid!not-for-mail\r\n"+
			"From: Feeder <feeder@example.invalid>\r\n"+
			"Newsgroups: local.test\r\n"+
			"Subject: newsflow feed test %d\r\n"+
			"Date: Mon, 01 Jan 2024 00:00:00 +0000\r\n"+
			"Message-ID: %s\r\n"+
			"\r\n"+
			"Body of article %d.\r\n"+
			"..a line that starts with a dot\r\n", i, id, i)
		for k := 0; k < i%5; k++ {
			fmt.Fprintf(&b, "filler line %d of article %d\r\n", k, i)
		}
		b.WriteString("last line\r\n.\r\n")
		wire := []byte(b.String())
		out[i] = innArticle{
			Article: Article{Token: fmt.Sprintf("@feed%d@", i), MessageID: id, Size: int64(len(wire))},
			wire:    wire,
		}
	}
	return out
}
