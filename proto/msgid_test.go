package proto

import (
	"errors"
	"strings"
	"testing"
)

func TestValidMessageID(t *testing.T) {
	long := "<" + strings.Repeat("a", 240) + "@example.com>" // 254 octets
	max := "<" + strings.Repeat("a", 236) + "@example.com>"  // 250 octets
	tests := []struct {
		id      string
		wantErr string // substring of the error; "" means valid
	}{
		{"<abc@example.com>", ""},
		{"<part1of10.Xyz$123@news.example.org>", ""},
		{"<a!#$%&'*+-/=?^_`{|}~@b>", ""},
		{"<1234@[127.0.0.1]>", ""},
		{"<x@[IPv6:2001:db8::1]>", ""},
		{max, ""},
		// Dots only between atext runs (RFC 5322 §3.2.3 dot-atom-text);
		// INN 2.7 refuses the rest too.
		{"<a.b.c@d.e>", ""},
		{"<.x@y>", "id-left has a dot first"},
		{"<..abc@example.com>", "id-left has a dot first"},
		{"<abc.@example.com>", "id-left has a dot first, last"},
		{"<a..b@c>", "id-left has a dot first, last or doubled"},
		{"<ab@example..com>", "id-right has a dot first, last or doubled"},
		{"<ab@.example.com>", "id-right has a dot"},
		{"<ab@example.com.>", "id-right has a dot"},
		{"<.@[1.2.3.4]>", "id-left has a dot"},
		// Broken rules, each named.
		{"", `does not start with "<"`},
		{"abc@example.com>", `does not start with "<"`},
		{"<abc@example.com", `does not end with ">"`},
		{"<>", `no "@"`},
		{"<abc>", `no "@"`},
		{"<@example.com>", "empty id-left"},
		{"<abc@>", "empty id-right"},
		{"<a b@example.com>", "whitespace"},
		{"<a\tb@example.com>", "whitespace"},
		{"<a\x01b@example.com>", "control octet 0x01"},
		{"<a\x7fb@example.com>", "control octet 0x7f"},
		{"<caf\xc3\xa9@example.com>", "non-ASCII octet 0xc3"},
		{"<a>b@example.com>", `">" before the end`},
		{"<a<b@example.com>", `id-left holds '<'`},
		{"<a@[<]>", ""}, // "<" is mdtext
		{"<a@b@example.com>", `more than one "@"`},
		{"<a(b)@example.com>", `id-left holds '('`},
		{"<a\"b\"@example.com>", `id-left holds '"'`},
		{"<a@ex:ample.com>", `id-right holds ':'`},
		{"<a@[1.2.3.4>", "not closed"},
		{"<a@[1.2\\.3]>", "literal holds '\\\\'"},
		{"<a@[1[2]>", "literal holds '['"},
		{long, "254 octets, longer than 250"},
	}
	for _, tc := range tests {
		err := ValidMessageID(tc.id)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("ValidMessageID(%q) = %v, want nil", tc.id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ValidMessageID(%q) = %v, want error containing %q", tc.id, err, tc.wantErr)
			continue
		}
		if !errors.Is(err, ErrBadMessageID) {
			t.Errorf("ValidMessageID(%q) error %v does not wrap ErrBadMessageID", tc.id, err)
		}
	}
}

func TestValidNNTPMessageID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"<abc@example.com>", true},
		{"<no-at-sign>", true},       // RFC 3977 §3.6 does not need "@"
		{"<a(b)\"c\"@[x]>", true},    // nor RFC 5536 atext
		{"<a b@example.com>", false}, // but no whitespace
		{"<a>b>", false},
		{"<>", false},
		{"abc", false},
		{"<" + strings.Repeat("x", 249) + ">", false},
	}
	for _, tc := range tests {
		if err := ValidNNTPMessageID(tc.id); (err == nil) != tc.ok {
			t.Errorf("ValidNNTPMessageID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}

func TestValidMessageIDNoAlloc(t *testing.T) {
	id := "<part1of10.Xyz$123@news.example.org>"
	if n := testing.AllocsPerRun(100, func() { _ = ValidMessageID(id) }); n != 0 {
		t.Errorf("ValidMessageID allocates %v times per valid id, want 0", n)
	}
}

// refValidMessageID is a slow, obviously-correct restatement of the rules
// ValidMessageID enforces, for the fuzz target to agree with.
func refValidMessageID(s string) bool {
	if len(s) > 250 || len(s) < 2 || s[0] != '<' || s[len(s)-1] != '>' {
		return false
	}
	left, right, ok := strings.Cut(s[1:len(s)-1], "@")
	if !ok || left == "" || right == "" {
		return false
	}
	const atext = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~"
	dotAtom := func(x string) bool {
		for _, part := range strings.Split(x, ".") {
			if part == "" {
				return false
			}
		}
		for _, c := range x {
			if !strings.ContainsRune(atext+".", c) {
				return false
			}
		}
		return true
	}
	if !dotAtom(left) {
		return false
	}
	if strings.HasPrefix(right, "[") {
		if len(right) < 2 || !strings.HasSuffix(right, "]") {
			return false
		}
		for _, c := range right[1 : len(right)-1] {
			if c < 33 || c > 126 || c == '>' || c == '[' || c == '\\' || c == ']' {
				return false
			}
		}
		return true
	}
	return dotAtom(right)
}

func FuzzMessageID(f *testing.F) {
	for _, s := range []string{
		"<abc@example.com>", "<1234@[127.0.0.1]>", "<..a@b>", "<a@b@c>", "<>", "",
		"<.x@y>", "<a..b@c>", "<a@b.>",
		"<part1of10.Xyz$123@news.example.org>", "<a b@c>", "<a@[b>",
		"<7f3e0c4a-9b1d-4e2a-8a8f-1c2d3e4f5a6b@news.example.net>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidMessageID(s)
		if got, want := err == nil, refValidMessageID(s); got != want {
			t.Fatalf("ValidMessageID(%q) = %v, reference says valid=%v", s, err, want)
		}
		if err != nil && !errors.Is(err, ErrBadMessageID) {
			t.Fatalf("error %v does not wrap ErrBadMessageID", err)
		}
		// Every RFC 5536 message-id is an RFC 3977 one.
		if err == nil && ValidNNTPMessageID(s) != nil {
			t.Fatalf("%q valid for RFC 5536 but not RFC 3977", s)
		}
	})
}

func BenchmarkValidMessageID(b *testing.B) {
	id := "<part1of10.Xyz$1234567890abcdef@news.example.org>"
	b.SetBytes(int64(len(id)))
	b.ReportAllocs()
	for b.Loop() {
		if ValidMessageID(id) != nil {
			b.Fatal("invalid")
		}
	}
}
