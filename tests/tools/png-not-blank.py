#!/usr/bin/env python3
"""png-not-blank.py FILE.png: exits 0 if the screenshot shows a drawing: at
least 2% of its pixels are neither white nor near-white and it has at least
four distinct colours. Decodes 8-bit RGB/RGBA PNGs with zlib alone (no
imaging library needed)."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour {colour})")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = previous[x]
            c = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + predictor) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = read_png(sys.argv[1])
    inked, colours = 0, set()
    for row in rows[::2]:
        for x in range(0, width * channels, channels * 2):
            pixel = row[x:x + 3]
            colours.add(pixel)
            if min(pixel) < 235:
                inked += 1
    sampled = ((height + 1) // 2) * ((width + 1) // 2)
    share = inked / max(1, sampled)
    print(f"{width}x{height}, {100 * share:.1f}% inked, {len(colours)} colours")
    return 0 if share >= 0.02 and len(colours) >= 4 else 1


if __name__ == "__main__":
    sys.exit(main())
