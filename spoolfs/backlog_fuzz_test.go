package spoolfs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/queue"
)

// backlogReferenceLines is the obvious reading of a replay file: every
// complete line, valid or not, and where the complete lines end.
func backlogReferenceLines(data []byte) (valid []queue.Entry, bad [][]byte, end int) {
	for {
		i := bytes.IndexByte(data[end:], '\n')
		if i < 0 {
			return valid, bad, end
		}
		line := data[end : end+i+1]
		if e, err := queue.ParseLine(line); err == nil {
			valid = append(valid, e)
		} else {
			bad = append(bad, line)
		}
		end += i + 1
	}
}

// FuzzBacklogReadReplay reads arbitrary replay files in batches of an
// arbitrary size and checks the batches against the reference: the same
// valid entries in order, every corrupt complete line quarantined once, a
// torn tail never consumed, offsets only at line starts, and Recover
// counting what the reads return.
func FuzzBacklogReadReplay(f *testing.F) {
	f.Add([]byte("@a@ <a@x>\n@b@ <b@x> 2\n"), uint8(1))
	f.Add([]byte("@a@ <a@x> 0\n@b@ <b@x> 00\n@c@ <c@x>\n"), uint8(2))
	f.Add([]byte("@a@ <a@x>\ngarbage\n@b@ <b@x>\n@c@ <c@"), uint8(2))
	f.Add([]byte("@030100000000000000000000000000000000@ <i.am.an.article@example.com>\n\x00\x00\x00"), uint8(3))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "peer.P"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := OpenBacklog(dir, "peer", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		rec, err := b.Recover()
		if err != nil {
			t.Fatal(err)
		}
		wantValid, wantBad, wantEnd := backlogReferenceLines(data)
		if rec.Replay == nil || rec.Replay.Entries != len(wantValid) || rec.Replay.Bytes != int64(len(data)) {
			t.Fatalf("Recover = %+v, want %d entries in %d octets", rec.Replay, len(wantValid), len(data))
		}
		n := int(max%8) + 1
		var got []queue.Entry
		bad, off := 0, int64(0)
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("no EOF after %d reads", i)
			}
			batch, err := b.ReadReplay(off, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch.Entries) > n || batch.Offset < off || (batch.Offset == off && !batch.EOF) {
				t.Fatalf("read(%d, %d) = %d entries to %d, eof %v", off, n, len(batch.Entries), batch.Offset, batch.EOF)
			}
			if batch.Offset > 0 && data[batch.Offset-1] != '\n' {
				t.Fatalf("read ends at %d, not at a line start", batch.Offset)
			}
			got = append(got, batch.Entries...)
			bad += batch.Bad
			off = batch.Offset
			if batch.EOF {
				break
			}
		}
		if diff := cmp.Diff(wantValid, got); diff != "" {
			t.Fatalf("entries (-reference +read):\n%s", diff)
		}
		if bad != len(wantBad) || off != int64(wantEnd) {
			t.Fatalf("read %d bad lines to offset %d, reference %d to %d", bad, off, len(wantBad), wantEnd)
		}
		quarantined, err := os.ReadFile(filepath.Join(dir, "peer.bad"))
		if err != nil && len(wantBad) > 0 {
			t.Fatal(err)
		}
		if want := bytes.Join(wantBad, nil); !bytes.Equal(quarantined, want) {
			t.Fatalf("quarantined %q, want %q", quarantined, want)
		}
	})
}

var backlogCheckpointRE = regexp.MustCompile(`^(0|[1-9][0-9]*)( (0|[1-9][0-9]*))?\n$`)

// FuzzBacklogCheckpoint checks the checkpoint parser against a regular
// expression and that what it accepts is exactly what Checkpoint writes.
func FuzzBacklogCheckpoint(f *testing.F) {
	for _, s := range []string{"0\n", "20\n", "010\n", "-1\n", "+5\n", "9223372036854775807\n", "9223372036854775808\n", "12", "1 \n", "20 3\n", "20 03\n", "20 3 4\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ck, ok := backlogParseCheckpoint(data)
		ref := backlogCheckpointRE.Match(data)
		if ref {
			for _, f := range strings.Fields(string(data)) {
				if _, err := strconv.ParseInt(f, 10, 64); err != nil {
					ref = false
				}
			}
		}
		if ok != ref {
			t.Fatalf("backlogParseCheckpoint(%q) ok=%v, reference %v", data, ok, ref)
		}
		written := strconv.FormatInt(ck.offset, 10)
		if ck.left >= 0 {
			written += " " + strconv.FormatInt(ck.left, 10)
		}
		if ok && written+"\n" != string(data) {
			t.Fatalf("backlogParseCheckpoint(%q) = %+v, which is written differently", data, ck)
		}
	})
}

// TestBacklogParseCheckpoint pins the checkpoint format, including what the
// fuzzer found.
func TestBacklogParseCheckpoint(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
		left int64
	}{
		{"20 3\n", 20, true, 3},
		{"20 03\n", 0, false, -1},
		{"20 3 4\n", 0, false, -1},
		{"20 \n", 0, false, -1},
		{"0\n", 0, true, -1},
		{"1048576\n", 1048576, true, -1},
		{"9223372036854775807\n", 1<<63 - 1, true, -1},
		{"9223372036854775808\n", 0, false, -1},
		{"-0\n", 0, false, -1}, // fuzz find: ParseInt accepts "-0", Checkpoint never writes it
		{"+5\n", 0, false, -1},
		{"010\n", 0, false, -1},
		{"42", 0, false, -1},
		{"42\n\n", 0, false, -1},
		{"\n", 0, false, -1},
	}
	for _, tc := range cases {
		ck, ok := backlogParseCheckpoint([]byte(tc.in))
		if ck.offset != tc.want || ck.left != tc.left || ok != tc.ok {
			t.Errorf("backlogParseCheckpoint(%q) = %+v %v, want %d left %d %v", tc.in, ck, ok, tc.want, tc.left, tc.ok)
		}
	}
}
