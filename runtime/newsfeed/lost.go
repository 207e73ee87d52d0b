package newsfeed

// Lost articles: acknowledged articles the spool lost, whatever the cause
// (data cut off or a segment gone, found at start; a record found corrupt
// when read). Each is forgotten by the history so that upstream may offer
// it again, and counted once in lostArticles, the figure that stats,
// /status and /metrics show as lost_articles. Every change is logged with
// the running total, so the log alone tells the operator how many there
// are.

// countLost adds n articles lost for cause to the total and logs it; args
// are more attributes for the line (an id).
func (r *Relay) countLost(n int64, cause string, args ...any) {
	total := r.lostArticles.Add(n)
	r.log.Error("acknowledged articles lost from the spool", append([]any{"cause", cause, "articles", n, "lost_articles", total}, args...)...)
}
