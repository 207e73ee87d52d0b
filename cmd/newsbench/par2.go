package main

// newsbench par2: Debian's par2 (par2cmdline) against newsget's PAR2 code
// on the same set, in the same run. The data (default 1 GiB in 20 files,
// like RAR volumes) is random; par2cmdline creates the set (default 10%
// recovery, 2000 blocks); then:
//
//   - verify of a clean download: par2 verify reads every file; newsget
//     checks the yEnc part CRCs the download computed (parts of 750,000
//     bytes here, computed when the data was written, as the decoder does)
//     against the slice CRCs, reading nothing. A full newsget verify that
//     reads every file is timed too.
//   - repair: 5% of the slices are damaged; par2 repair runs, its
//     untouched damaged originals (NAME.1) are put back, newsget verifies
//     and repairs the same damage in place; then par2 verify must find
//     newsget's result whole.
//
// Speed-ups are par2's wall time divided by newsget's; MB/s per core is
// data bytes per CPU second. newsget's times include reading the set.

import (
	"context"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/proto/par2"
	"github.com/newsflow/newsflow/runtime/newsget/parity"
)

func init() {
	register("par2", "newsget's PAR2 verify and repair vs par2cmdline on the same set", benchPar2)
}

func benchPar2(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench par2", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizeMiB := fs.Int("size", 1024, "data size in `MiB`")
	nfiles := fs.Int("files", 20, "data files")
	redundancy := fs.Int("r", 10, "recovery, `percent`")
	damagePct := fs.Float64("damage", 5, "slices damaged, `percent`")
	blocks := fs.Int("b", 2000, "input slices (par2 -b)")
	bin := fs.String("par2", "par2", "par2cmdline `binary`")
	dir := fs.String("dir", "", "work `directory` (default: a temporary one, removed after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	par2bin, err := exec.LookPath(*bin)
	if err != nil {
		return fmt.Errorf("par2cmdline not found (apt-get install par2): %w", err)
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "newsbench-par2-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	name := fmt.Sprintf("par2-%s", sizeName(*sizeMiB))
	total := int64(*sizeMiB) << 20
	ctx := context.Background()

	// The data, and the part CRCs a download would have computed.
	fmt.Fprintf(stderr, "newsbench par2: writing %d MiB in %d files to %s\n", *sizeMiB, *nfiles, work)
	known, names, err := writePar2Data(work, total, *nfiles)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "newsbench par2: par2 create -r%d -b%d\n", *redundancy, *blocks)
	if _, err := runTimed(work, par2bin, append([]string{"create", "-q", "-q", fmt.Sprintf("-r%d", *redundancy), fmt.Sprintf("-b%d", *blocks), "set.par2"}, names...)...); err != nil {
		return err
	}
	// newsget's timings include reading the set (packet MD5s, recovery
	// data included), as par2's do.
	index := filepath.Join(work, "set.par2")
	set, err := parity.Open(ctx, index)
	if err != nil {
		return err
	}
	open := func() error {
		var err error
		set, err = parity.Open(ctx, index)
		return err
	}
	t := Table{Header: []string{"case", "tool", "wall s", "cpu s", "MB/s", "MB/s/core", "note"}}
	mb := float64(total) / 1e6
	row := func(tool string, r timing, note string) {
		t.Add(name, tool, f3(r.wall), f3(r.cpu), f1(mb/r.wall), f1(mb/max(r.cpu, 1e-9)), note)
	}

	// Verify of a clean download.
	pv, err := runTimed(work, par2bin, "verify", "-q", "-q", "set.par2")
	if err != nil {
		return err
	}
	row("par2 verify", pv, "reads every file")
	var rep *parity.Report
	qv, err := timeSelf(func() error {
		if err := open(); err != nil {
			return err
		}
		var err error
		rep, err = set.Verify(ctx, parity.Options{Known: known})
		return err
	})
	if err != nil {
		return err
	}
	if !rep.Whole() {
		return fmt.Errorf("newsget quick verify: not whole")
	}
	row("newsget verify", qv, fmt.Sprintf("download CRCs: %d of %d files confirmed, %d bytes read", rep.Quick, len(set.Files), rep.Read))
	fv, err := timeSelf(func() error {
		if err := open(); err != nil {
			return err
		}
		var err error
		rep, err = set.Verify(ctx, parity.Options{})
		return err
	})
	if err != nil {
		return err
	}
	row("newsget verify (read)", fv, fmt.Sprintf("no CRCs: %d bytes read", rep.Read))

	// Damage, par2 repair, put the damage back, newsget repair.
	damaged, err := damagePar2(work, set, *damagePct)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "newsbench par2: %d of %d slices damaged; par2 repair\n", damaged, set.Slices)
	pr, err := runTimed(work, par2bin, "repair", "-q", "-q", "set.par2")
	if err != nil {
		return err
	}
	row("par2 repair", pr, fmt.Sprintf("%d slices", damaged))
	for _, f := range set.Files {
		p := filepath.Join(work, f.Name)
		if _, err := os.Stat(p + ".1"); err == nil {
			if err := os.Rename(p+".1", p); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "newsbench par2: newsget repair\n")
	nr, err := timeSelf(func() error {
		if err := open(); err != nil {
			return err
		}
		rep, err := set.Verify(ctx, parity.Options{})
		if err != nil {
			return err
		}
		if len(rep.Missing) != damaged {
			return fmt.Errorf("newsget verify found %d damaged slices, want %d", len(rep.Missing), damaged)
		}
		_, err = set.Repair(ctx, rep, parity.Options{})
		return err
	})
	if err != nil {
		return err
	}
	row("newsget repair", nr, fmt.Sprintf("%d slices, verify included", damaged))
	if _, err := runTimed(work, par2bin, "verify", "-q", "-q", "set.par2"); err != nil {
		return fmt.Errorf("par2 verify of newsget's repair: %w", err)
	}
	t.Print(stdout)
	fmt.Fprintf(stdout, "par2 verify finds newsget's repaired files whole\n")
	Ratio(stdout, name+"-repair", "speedup", pr.wall, nr.wall)
	Ratio(stdout, name+"-verify", "speedup", pv.wall, qv.wall)
	Ratio(stdout, name+"-verify-read", "speedup", pv.wall, fv.wall)
	return nil
}

func sizeName(mib int) string {
	if mib%1024 == 0 {
		return fmt.Sprintf("%dg", mib/1024)
	}
	return fmt.Sprintf("%dm", mib)
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

// writePar2Data writes nfiles random files adding up to total bytes and
// returns the CRCs of their 750,000-byte parts, as a yEnc download
// computes them.
func writePar2Data(dir string, total int64, nfiles int) (map[string][]par2.RangeCRC, []string, error) {
	const part = 750000
	r := rand.NewChaCha8([32]byte{'n', 'e', 'w', 's'})
	known := map[string][]par2.RangeCRC{}
	var names []string
	buf := make([]byte, part)
	for i := range nfiles {
		name := fmt.Sprintf("data.part%02d.rar", i+1)
		size := total / int64(nfiles)
		if i == nfiles-1 {
			size = total - size*int64(nfiles-1)
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		for off := int64(0); off < size; off += part {
			b := buf[:min(part, size-off)]
			r.Read(b)
			known[name] = append(known[name], par2.RangeCRC{Offset: off, Length: int64(len(b)), CRC32: crc32.ChecksumIEEE(b)})
			if _, err := f.Write(b); err != nil {
				f.Close()
				return nil, nil, err
			}
		}
		if err := f.Close(); err != nil {
			return nil, nil, err
		}
		names = append(names, name)
	}
	return known, names, nil
}

// damagePar2 overwrites 64 bytes in the middle of pct percent of the
// slices (chosen at random, fixed seed) and returns how many.
func damagePar2(dir string, set *parity.Set, pct float64) (int, error) {
	n := max(1, int(float64(set.Slices)*pct/100))
	n = min(n, len(set.Recovery))
	pick := rand.New(rand.NewPCG(5, 5)).Perm(set.Slices)[:n]
	sort.Ints(pick)
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = 0x5a
	}
	for _, i := range pick {
		fi, off, ln := set.Slice(i)
		f, err := os.OpenFile(filepath.Join(dir, set.Files[fi].Name), os.O_RDWR, 0)
		if err != nil {
			return 0, err
		}
		_, err = f.WriteAt(junk[:min(64, ln)], off+int64(ln/2))
		f.Close()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// timing is one measured run: wall and CPU (user+system) seconds.
type timing struct{ wall, cpu float64 }

// runTimed runs a command in dir and returns its wall and CPU time.
func runTimed(dir, name string, args ...string) (timing, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start).Seconds()
	if err != nil {
		return timing{}, fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return timing{wall, tv(ru.Utime) + tv(ru.Stime)}, nil
}

// timeSelf times fn in this process.
func timeSelf(fn func() error) (timing, error) {
	var a, b syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &a)
	start := time.Now()
	err := fn()
	wall := time.Since(start).Seconds()
	syscall.Getrusage(syscall.RUSAGE_SELF, &b)
	return timing{wall, tv(b.Utime) - tv(a.Utime) + tv(b.Stime) - tv(a.Stime)}, err
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
