package cluster

import "testing"

// FuzzParseRef: a queue entry either fails to parse or parses to a Ref
// whose String parses back to the same Ref (entries come from any node,
// or from whoever can publish on the queue's subject).
func FuzzParseRef(f *testing.F) {
	for _, seed := range []string{
		"<a@b> 2048 1",
		"<big@x> 3145728 4",
		"<a@b>  10\t1",
		"<a@b> 1 2",
		"<a@b> -1 1",
		"a@b 10 1",
		"<a@b> 99999999999999999999 1",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRef(b)
		if err != nil {
			return
		}
		if r.Size <= 0 || r.Chunks <= 0 || r.Chunks > r.Size {
			t.Fatalf("ParseRef(%q) = %+v: impossible sizes accepted", b, r)
		}
		again, err := ParseRef([]byte(r.String()))
		if err != nil || again != r {
			t.Fatalf("ParseRef(%q) = %+v, but its String %q parses to %+v, %v", b, r, r.String(), again, err)
		}
	})
}
