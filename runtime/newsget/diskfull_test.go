package newsget

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// mountTmpfs mounts a tmpfs of the given size ("4m") on a fresh directory
// and returns it; the test skips unless it runs as root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (run the tests as root to check disk-full handling)")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): disk-full handling not checked", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestDiskFullResume: the download directory fills
// part way through a download; space returns; the rerun must either
// report the file incomplete or produce it byte for byte, never report
// complete a file holding zeros where a failed write left a hole. The
// posting has no whole-file crc32, so only per-part checks stand between
// a lost write and a "complete" file: a part whose bytes were written
// after the disk filled (or skipped once a write failed) is never
// recorded done.
func TestDiskFullResume(t *testing.T) {
	for round := range 1 {
		out := mountTmpfs(t, "4m")
		s := nntptest.Start(t, nntptest.Options{})
		p := newPosting("big.bin", uint64(100+round), 12<<20, 64<<10)
		p.NoFileCRC = true
		serve(t, s, nil, p)
		sc := server(s, "a")
		sc.Pipeline = 8
		r := newRun(t, sc)
		r.cfg.DownloadDir = out
		r.opts.ReadBuffer = 2 << 20
		sum := r.run(t, poster.NZB(p))
		if sum.Complete() {
			t.Fatalf("round %d: 12 MiB into a 4 MiB tmpfs reported complete", round)
		}
		if err := syscall.Mount("tmpfs", out, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
			t.Fatal(err)
		}
		sum = r.run(t, poster.NZB(p))
		if !sum.Complete() {
			t.Fatalf("round %d: rerun with space: %v (fatal %q)", round, results(sum), sum.Fatal)
		}
		got, err := os.ReadFile(filepath.Join(out, "big.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p.Data) {
			i := 0
			for i < len(got) && i < len(p.Data) && got[i] == p.Data[i] {
				i++
			}
			t.Fatalf("round %d: rerun reported complete, but the file differs from byte %d (%d bytes, want %d)", round, i, len(got), len(p.Data))
		}
	}
}
