package spoolfs

import (
	"hash/maphash"
	"strings"

	"github.com/newsflow/newsflow/proto"
)

// Message-ids are compared as INN compares them (RFC 5536 §3.1.3, RFC
// 5322 §3.4.1): the local part, before the last "@", exactly; the domain
// after it without regard to ASCII case. "<a@Example.ORG>" and
// "<a@example.org>" are one article, "<A@example.org>" another. The
// history keys its maps and hashes its index by the folded form (histKey,
// idHash) and compares a log record's id with idEqual; the log, the spool
// and the peers keep each id as it was received. The index lives only in
// memory and is rebuilt from the log at open, so a log written before the
// domain was folded reads the same: of two records that differ only in
// the domain's case, the first one logged answers for both.

// domainAt returns the index of the domain part of id: just after its
// last "@", or len(id) when it has none.
func domainAt(id string) int {
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		return i + 1
	}
	return len(id)
}

// hasUpperASCII reports whether s holds an ASCII capital letter.
func hasUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// histKey is id with its domain part in ASCII lower case; id itself (no
// copy) when that is already so.
func histKey(id string) string {
	d := domainAt(id)
	if !hasUpperASCII(id[d:]) {
		return id
	}
	b := []byte(id)
	for i := d; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// idHash is the index hash of id: the hash of histKey(id), without an
// allocation.
func idHash(seed maphash.Seed, id string) uint64 {
	d := domainAt(id)
	if !hasUpperASCII(id[d:]) || len(id) > maxMsgIDLen {
		return maphash.String(seed, histKey(id))
	}
	var buf [maxMsgIDLen]byte
	b := buf[:copy(buf[:], id)]
	for i := d; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return maphash.Bytes(seed, b)
}

// idEqual reports whether the id a read from the log names the same
// article as id.
func idEqual(a []byte, id string) bool {
	if len(a) != len(id) {
		return false
	}
	d := domainAt(id)
	return string(a[:d]) == id[:d] && proto.EqualFoldASCII(a[d:], id[d:])
}
