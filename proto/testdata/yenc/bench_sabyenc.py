#!/usr/bin/python3
# Speed reference for BenchmarkYencDecode: sabyenc (Debian python3-sabyenc,
# SIMD) decoding a 700 KiB part of random bytes, 128-character lines, fed
# as 64 KiB socket chunks like SABnzbd does. Prints MB of encoded input per
# wall second and per CPU second (median of 3).
#   /usr/bin/python3 bench_sabyenc.py
import random, statistics, time, sabyenc3

rng = random.Random(42)
data = bytes(rng.getrandbits(8) for _ in range(700 << 10))
enc, crc = sabyenc3.encode(data)
if not enc.endswith(b"\r\n"):
    enc += b"\r\n"
body = (b"=ybegin part=1 total=10 line=128 size=%d name=bench.bin\r\n=ypart begin=1 end=%d\r\n"
        % (7 << 20, len(data)) + enc + b"=yend size=%d part=1 pcrc32=%08x\r\n.\r\n" % (len(data), crc))
chunks = [body[i:i + 65536] for i in range(0, len(body), 65536)]
wall, cpu = [], []
for _ in range(3):
    n = 300
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        out, name, crc_ok = sabyenc3.decode_usenet_chunks(chunks)
    wall.append(len(body) * n / (time.perf_counter() - t) / 1e6)
    cpu.append(len(body) * n / (time.process_time() - c) / 1e6)
assert out == data and crc_ok
print("sabyenc %s: median %.0f MB/s wall, %.0f MB per CPU-second" % (sabyenc3.simd, statistics.median(wall), statistics.median(cpu)))
