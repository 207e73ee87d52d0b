// Package proto holds the NNTP wire format and the article formats newsflow
// speaks: commands and responses (RFC 3977, 4643, 4644), multi-line blocks,
// article headers (RFC 5536), overview and list lines, and rnews batches.
//
// Everything here is pure: functions and incremental parsers over bytes, with
// no sockets, files, goroutines or clock.
package proto
