package main

// newsbench yenc: newsflow's fused yEnc decoder (dot-unstuffing, end of
// body, decode and CRC-32 in one pass) against Debian's python3-sabyenc
// (SIMD C, as used by SABnzbd) on the same body: random bytes in one part,
// 128-character lines, fed as 64 KiB socket-sized chunks, as
// proto/testdata/yenc/bench_sabyenc.py does. Both decode the very same
// file and check the result; figures are MB of encoded input per wall
// second and per CPU second, median of 3 repetitions.

import (
	"bytes"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

func init() {
	register("yenc", "newsflow's yEnc decoder vs python3-sabyenc on the same body", benchYenc)
}

// sabyencScript decodes the body in argv[1] (data in argv[2]) argv[3]
// times per repetition, 3 repetitions, and prints "wall MBs cpu MBs".
const sabyencScript = `
import sys, time, statistics, sabyenc3
body = open(sys.argv[1], "rb").read()
data = open(sys.argv[2], "rb").read()
n = int(sys.argv[3])
chunks = [body[i:i + 65536] for i in range(0, len(body), 65536)]
wall, cpu = [], []
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        out, name, crc_ok = sabyenc3.decode_usenet_chunks(chunks)
    wall.append(len(body) * n / (time.perf_counter() - t) / 1e6)
    cpu.append(len(body) * n / (time.process_time() - c) / 1e6)
assert out == data and crc_ok, "sabyenc decoded something else"
print("%.1f %.1f %s" % (statistics.median(wall), statistics.median(cpu), sabyenc3.simd))
`

func benchYenc(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench yenc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizeKiB := fs.Int("size", 700, "part size in `KiB` (decoded)")
	rounds := fs.Int("rounds", 0, "decodes per repetition (default: about 200 MB of input)")
	python := fs.String("python", "/usr/bin/python3", "the `python3` that has sabyenc3")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data := poster.RandomData(42, *sizeKiB<<10)
	body := proto.YencEncode(nil, data, proto.YencOptions{Name: "bench.bin", Part: 1, Total: 10, Begin: 1,
		Size: int64(len(data)) * 10, Wire: true})
	n := *rounds
	if n <= 0 {
		n = max(1, 200<<20/len(body))
	}
	name := fmt.Sprintf("yenc-%dk", *sizeKiB)
	t := Table{Header: []string{"case", "decoder", "MB/s", "MB/cpu-s", "note"}}

	wall, cpu, err := decodeGo(body, data, n)
	if err != nil {
		return err
	}
	t.Add(name, "newsflow", f1(wall), f1(cpu), fmt.Sprintf("%d x %d bytes, 64 KiB chunks", n, len(body)))

	swall, scpu, note, err := decodeSabyenc(*python, body, data, n)
	if err != nil {
		fmt.Fprintf(stderr, "newsbench yenc: sabyenc skipped: %v (install it with: apt-get install python3-sabyenc)\n", err)
	} else {
		t.Add(name, "sabyenc", f1(swall), f1(scpu), "simd "+note)
	}
	t.Print(stdout)
	if err == nil {
		Ratio(stdout, name, "mb_per_s", wall, swall)
		Ratio(stdout, name, "mb_per_cpu_s", cpu, scpu)
	}
	return nil
}

// f1 formats a figure with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// decodeGo decodes body n times per repetition with proto.YencDecoder in
// 64 KiB chunks and returns the median MB/s per wall and per CPU second.
func decodeGo(body, data []byte, n int) (float64, float64, error) {
	dst := make([]byte, 0, len(data)+64)
	var d proto.YencDecoder
	var walls, cpus []float64
	for rep := 0; rep < 3; rep++ {
		start, c0 := time.Now(), selfCPU()
		for i := 0; i < n; i++ {
			d.Reset()
			out := dst[:0]
			for off := 0; off < len(body) && !d.Done(); {
				end := min(off+65536, len(body))
				var used int
				var err error
				out, used, err = d.Feed(out, body[off:end])
				if err != nil {
					return 0, 0, err
				}
				off += used
			}
			if i == 0 && rep == 0 {
				if err := d.Verify(); err != nil || !bytes.Equal(out, data) || d.Part().CRC != crc32.ChecksumIEEE(data) {
					return 0, 0, fmt.Errorf("newsflow decoded something else (%v)", err)
				}
			}
		}
		total := int64(len(body)) * int64(n)
		walls = append(walls, megabytesPerSec(total, time.Since(start)))
		cpus = append(cpus, megabytesPerSec(total, selfCPU()-c0))
	}
	return Median(walls), Median(cpus), nil
}

// decodeSabyenc runs the script with python.
func decodeSabyenc(python string, body, data []byte, n int) (float64, float64, string, error) {
	if _, err := exec.LookPath(python); err != nil {
		return 0, 0, "", fmt.Errorf("%s not found", python)
	}
	dir, err := os.MkdirTemp("", "newsbench-yenc-")
	if err != nil {
		return 0, 0, "", err
	}
	defer os.RemoveAll(dir)
	bf, df := filepath.Join(dir, "body"), filepath.Join(dir, "data")
	if err := os.WriteFile(bf, body, 0o644); err != nil {
		return 0, 0, "", err
	}
	if err := os.WriteFile(df, data, 0o644); err != nil {
		return 0, 0, "", err
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(python, "-c", sabyencScript, bf, df, strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return 0, 0, "", fmt.Errorf("%v: %s", err, msg)
	}
	f := strings.Fields(out.String())
	if len(f) < 2 {
		return 0, 0, "", fmt.Errorf("unexpected output %q", out.String())
	}
	w, _ := strconv.ParseFloat(f[0], 64)
	c, _ := strconv.ParseFloat(f[1], 64)
	return w, c, strings.Join(f[2:], " "), nil
}

// megabytesPerSec is bytes per second in MB (10^6).
func megabytesPerSec(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e6
}
