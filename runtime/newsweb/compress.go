package newsweb

// Compression: a response of at least minGzip bytes goes gzipped to a
// client that accepts gzip (RFC 9110 §12.5.3). The compressed form is
// made once per response and kept with it, so a cached page (article
// pages, and every page the page cache holds) is compressed once, not on
// each view; this is why the standard library's compress/gzip is enough
// here and no handler wrapper (such as klauspost's gzhttp, which
// compresses per request) is used. The gzipped representation has its own
// ETag (the plain one with "-gz"), as RFC 9110 §8.8.3 asks of a strong
// validator.

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"sync"
)

// minGzip is the smallest body worth compressing (about one packet).
const minGzip = 1024

// gzipped holds a response's compressed body, made on first use.
type gzipped struct {
	once sync.Once
	body []byte // nil when compression did not pay
}

// gzipBody returns resp's body gzipped, or nil when it is not worth it.
func (r *response) gzipBody() []byte {
	if len(r.body) < minGzip || r.packed {
		return nil
	}
	r.gz.once.Do(func() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed+4)
		w.Write(r.body)
		w.Close()
		if b.Len() < len(r.body) {
			r.gz.body = b.Bytes()
		}
	})
	return r.gz.body
}

// gzipETag is the validator of the gzipped representation.
func gzipETag(etag string) string {
	return strings.TrimSuffix(etag, `"`) + `-gz"`
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip: the
// first coding named gzip or * decides, by its q (1 when not given). It
// is asked on every view, so it walks the value in place (no Split).
func acceptsGzip(v string) bool {
	for v != "" {
		var part string
		part, v, _ = strings.Cut(v, ",")
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		q := 1.0
		for params != "" {
			var p string
			p, params, _ = strings.Cut(params, ";")
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}
