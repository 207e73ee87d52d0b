package proto

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

const rnewsArt1 = "Path: a!not-for-mail\nFrom: a@example.org\nNewsgroups: misc.test\nSubject: one\nDate: 14 Mar 2023 09:26:53 GMT\nMessage-ID: <1@example.org>\n\nbody\n"
const rnewsArt2 = "Path: b!not-for-mail\nSubject: two\n\n#! rnews 5\nnot a header, just body text\n"

func readAllRnews(r *RnewsReader) ([]string, error) {
	var out []string
	for {
		a, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if a != nil {
				out = append(out, "PARTIAL:"+string(a))
			}
			return out, err
		}
		out = append(out, string(a))
	}
}

func TestRnewsReader(t *testing.T) {
	batch := string(AppendRnews(AppendRnews(nil, []byte(rnewsArt1)), []byte(rnewsArt2)))
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		wantErr string
	}{
		{"two articles, body mentions #! rnews", batch, 0, []string{rnewsArt1, rnewsArt2}, ""},
		{"empty input", "", 0, nil, ""},
		{"empty article", "#! rnews 0\n#! rnews 1\nx", 0, []string{"", "x"}, ""},
		{"CRLF and extra blanks in the header line", "#! rnews  3 \r\nabc", 0, []string{"abc"}, ""},
		{"not a batch", "Path: x\n\nbody\n", 0, nil, `offset 0: not an rnews batch where "#! rnews N" should start article 1: "Path: x\n\nbody\n"`},
		{"garbage between articles", "#! rnews 3\nabc\n#! rnews 1\nx", 0, nil, `offset 0: article 1 announced as 3 octets does not end where the next "#! rnews N" line or the batch does (found "\n#! rnews" at offset 14)`},
		{"trailing newline is garbage too", "#! rnews 3\nabc\n", 0, nil, `offset 0: article 1 announced as 3 octets does not end where`},
		{"length too large takes in the next entry", string(AppendRnews(nil, []byte(rnewsArt1))) + "#! rnews 10\n" + rnewsArt1 + "#! rnews 5\nabcde",
			0, []string{rnewsArt1}, "article 2 announced as 10 octets does not end where"},
		{"length too large runs past the next header", "#! rnews 3\nabc#! rnews 20\n" + rnewsArt2 + "#! rnews 1\nx", 0, []string{"abc"}, "article 2 announced as 20 octets"},
		{"length too small cuts the article", "#! rnews 3\nabc#! rnews 8\n" + rnewsArt1 + "#! rnews 1\nx", 0, []string{"abc"}, "article 2 announced as 8 octets"},
		{"length too large for the last article", "#! rnews 3\nabc#! rnews 20\nshort", 0, []string{"abc", "PARTIAL:short"}, "article 2 truncated"},
		{"truncated article", "#! rnews 10\nabc", 0, []string{"PARTIAL:abc"}, "offset 0: article 1 truncated: 3 of 10 octets"},
		{"too large", "#! rnews 3\nabc#! rnews 100\n" + strings.Repeat("x", 100), 50, []string{"abc"}, "offset 14: article of 100 octets, limit 50"},
		{"bad size", "#! rnews 12x\nabc", 0, nil, `bad rnews line "#! rnews 12x": size is not a number`},
		{"negative size", "#! rnews -1\n", 0, nil, "size is not a number"},
		{"missing size", "#! rnews \n", 0, nil, `want "#! rnews N"`},
		{"two sizes", "#! rnews 1 2\nab", 0, nil, `want "#! rnews N"`},
		{"header line never ends", "#! rnews " + strings.Repeat("1", 200), 0, nil, "line not ended by LF within 128 octets"},
		{"header cut short at EOF", "#! rnews 1\nx#! rne", 0, nil, `article 1 announced as 1 octets does not end where the next "#! rnews N" line or the batch does (found "#! rne" at offset 12)`},
		{"compressed", "#! cunbatch\n\x1f\x9d", 0, nil, "compressed batch (decompress it first)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One-byte reads exercise every buffer boundary.
			for _, src := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				r := NewRnewsReader(src, tc.max)
				got, err := readAllRnews(r)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("articles (-want +got):\n%s", diff)
				}
				if tc.wantErr == "" {
					if err != nil {
						t.Fatalf("error %v", err)
					}
					if r.Offset() != int64(len(tc.in)) {
						t.Errorf("Offset = %d, want %d", r.Offset(), len(tc.in))
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				// The error sticks.
				if _, err2 := r.Next(); err2 != err {
					t.Errorf("second Next = %v, want the same error", err2)
				}
			}
		})
	}
}

func TestRnewsErrors(t *testing.T) {
	r := NewRnewsReader(strings.NewReader("#! rnews 100\n"), 10)
	if _, err := r.Next(); !errors.Is(err, ErrRnewsTooLarge) {
		t.Errorf("error %v does not wrap ErrRnewsTooLarge", err)
	}
	r = NewRnewsReader(strings.NewReader("#! rnews 5\nab"), 0)
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v does not wrap io.ErrUnexpectedEOF", err)
	}
	boom := errors.New("disk on fire")
	r = NewRnewsReader(io.MultiReader(strings.NewReader("#! rnews 5\nab"), iotest.ErrReader(boom)), 0)
	if a, err := r.Next(); !errors.Is(err, boom) || string(a) != "ab" {
		t.Errorf("read error: %q, %v", a, err)
	}
}

func TestIsRnewsBatch(t *testing.T) {
	tests := []struct {
		prefix string
		want   bool
	}{
		{"#! rnews 123\n", true},
		{"#! rnews", true},
		{"#! rnews ", true},
		{"#! rnew", false},
		{"#! cunbatch\n", false},
		{"Path: a!b\n", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := IsRnewsBatch([]byte(tc.prefix)); got != tc.want {
			t.Errorf("IsRnewsBatch(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

func TestRnewsWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewRnewsWriter(&buf)
	for _, a := range []string{rnewsArt1, "", rnewsArt2} {
		if err := w.WriteArticle([]byte(a)); err != nil {
			t.Fatal(err)
		}
	}
	want := AppendRnews(AppendRnews(AppendRnews(nil, []byte(rnewsArt1)), nil), []byte(rnewsArt2))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("writer output %q\nwant %q", buf.Bytes(), want)
	}
	if err := NewRnewsWriter(iotestErrWriter{}).WriteArticle([]byte("x")); err == nil || !strings.Contains(err.Error(), "rnews: write") {
		t.Errorf("write error = %v", err)
	}
}

type iotestErrWriter struct{}

func (iotestErrWriter) Write([]byte) (int, error) { return 0, errors.New("no space") }

func FuzzRnews(f *testing.F) {
	f.Add([]byte(string(AppendRnews(AppendRnews(nil, []byte(rnewsArt1)), []byte(rnewsArt2)))), []byte("a"), []byte("#! rnews 1\n"), uint8(2))
	f.Add([]byte("#! rnews 10\nabc"), []byte(""), []byte("x"), uint8(0))
	f.Add([]byte("Path: x\n\nplain article\n"), []byte("\n"), []byte(""), uint8(1))
	f.Fuzz(func(t *testing.T, in, a1, a2 []byte, reps uint8) {
		// Arbitrary input: never panics, and never loses or invents data:
		// after a clean end, header lines and articles account for every
		// input octet; after an error, for no more than the input.
		r := NewRnewsReader(bytes.NewReader(in), 1<<16)
		var total int64
		var err error
		for i := 0; ; i++ {
			var a []byte
			a, err = r.Next()
			total += int64(len(a))
			if err != nil {
				break
			}
			if i > len(in) {
				t.Fatalf("more articles than input octets")
			}
		}
		if err == io.EOF {
			if total+r.HeaderBytes() != int64(len(in)) || r.Offset() != int64(len(in)) {
				t.Fatalf("clean end but %d+%d octets of %d accounted for", total, r.HeaderBytes(), len(in))
			}
		} else if total+r.HeaderBytes() > int64(len(in)) {
			t.Fatalf("returned more than the input")
		}
		// Every article returned is followed, in the input, by the next
		// "#! rnews " line or by the end: a wrong length never yields an
		// article.
		r = NewRnewsReader(bytes.NewReader(in), 1<<16)
		for {
			a, err := r.Next()
			if err != nil {
				break
			}
			if rest := in[r.Offset():]; len(rest) > 0 && !bytes.HasPrefix(rest, []byte("#! rnews ")) {
				t.Fatalf("article %q returned, followed by %q", a, rest[:min(len(rest), 16)])
			}
		}
		// One entry whose N is off by d (too small or too large) is never
		// returned; when no '#' in the articles can fake the next header
		// line, it is an error.
		if d := int(reps%5) - 2; d != 0 && len(a1)+d >= 0 && !bytes.ContainsRune(a1, '#') && !bytes.ContainsRune(a2, '#') {
			bad := append([]byte("#! rnews "+strconv.Itoa(len(a1)+d)+"\n"), a1...)
			bad = AppendRnews(bad, a2)
			if got, err := NewRnewsReader(bytes.NewReader(bad), 0).Next(); err == nil {
				t.Fatalf("entry with N off by %d returned %q", d, got)
			}
		}
		// Write then read returns the same articles.
		var arts [][]byte
		for i := 0; i < int(reps%8); i++ {
			arts = append(arts, a1, a2)
		}
		var batch []byte
		for _, a := range arts {
			batch = AppendRnews(batch, a)
		}
		if len(batch) > 0 && !IsRnewsBatch(batch) {
			t.Fatalf("IsRnewsBatch false on a written batch")
		}
		r = NewRnewsReader(bytes.NewReader(batch), 0)
		for i, want := range arts {
			got, err := r.Next()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("article %d: %q, %v; want %q", i, got, err, want)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the last article: %v", err)
		}
	})
}
