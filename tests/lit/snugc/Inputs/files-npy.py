"""files-npy.py OUT_DIR: .npy files for files-tensors.test, for an f32[1,4]
input: good.npy, trailing.npy (the 16 data bytes, then 4 KiB more: a
sparse-file-sized stand-in for a 12 KiB header on a 3 GiB file),
short.npy (15 data bytes), fortran-spaces.npy (fortran_order: then only
spaces)."""
import os
import struct
import sys


def npy(header, data):
    raw = header.encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw + data


out = sys.argv[1]
good = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }\n"
files = {
    "good.npy": npy(good, b"\0" * 16),
    "trailing.npy": npy(good, b"\0" * (16 + 4096)),
    "short.npy": npy(good, b"\0" * 15),
    "fortran-spaces.npy": npy("{'descr': '<f4', 'shape': (1, 4), 'fortran_order':    ", b""),
}
for name, data in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
