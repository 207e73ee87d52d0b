#!/usr/bin/python3
# Generates the yEnc test vectors in this directory with Debian's
# python3-sabyenc (an independent SIMD yEnc codec) as the encoder:
#   apt-get install -y python3-sabyenc && /usr/bin/python3 gen.py
# Each NAME.wire is an NNTP body in wire form (dot-stuffed, ".\r\n"
# terminated) whose data lines and CRC come from sabyenc; NAME.bin is the
# original data. Headers follow yEnc 1.3 and are written here.
import random, zlib, sabyenc3

def stuff(lines):
    out = b""
    for l in lines:
        if l.startswith(b"."):
            l = b"." + l
        out += l + b"\r\n"
    return out + b".\r\n"

def article(data, name, part=None, total=None, begin=None, size=None, filecrc=None):
    enc, crc = sabyenc3.encode(data)
    lines = []
    if part is None:
        lines.append(b"=ybegin line=128 size=%d name=%s" % (len(data), name))
    else:
        lines.append(b"=ybegin part=%d total=%d line=128 size=%d name=%s" % (part, total, size, name))
        lines.append(b"=ypart begin=%d end=%d" % (begin, begin + len(data) - 1))
    lines += [l for l in enc.split(b"\r\n") if l != b""]
    if part is None:
        lines.append(b"=yend size=%d crc32=%08x" % (len(data), crc))
    else:
        lines.append(b"=yend size=%d part=%d pcrc32=%08x crc32=%08x" % (len(data), part, crc, filecrc))
    return stuff(lines)

rng = random.Random(20260101)
single = bytes(rng.randrange(256) for _ in range(3000))
allbytes = bytes(range(256)) * 4 + bytes([214, 224, 227, 19, 223, 246, 4]) * 60
whole = bytes(rng.randrange(256) for _ in range(6000))

vectors = {
    "single": (single, article(single, b"sab single.bin")),
    "allbytes": (allbytes, article(allbytes, b"all bytes.dat")),
    "multi2": (whole[2000:4000], article(whole[2000:4000], b"whole.bin", part=2, total=3, begin=2001,
                                         size=len(whole), filecrc=zlib.crc32(whole))),
}
for name, (data, wire) in vectors.items():
    open(name + ".bin", "wb").write(data)
    open(name + ".wire", "wb").write(wire)
