"""Prints every .npy file of a directory (argv[1]) as `name = [v, ...]`,
sorted by name, for FileCheck. Plain Python (no numpy): integer and bool
arrays of the dtypes snug writes."""
import ast
import os
import struct
import sys

FORMATS = {"<i8": "q", "<i4": "i", "<i2": "h", "|i1": "b", "|u1": "B",
           "<u2": "H", "<u4": "I", "<u8": "Q", "|b1": "?", "<f4": "f",
           "<f8": "d"}

directory = sys.argv[1]
for name in sorted(os.listdir(directory)):
    if not name.endswith(".npy"):
        continue
    with open(os.path.join(directory, name), "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", name
    major = data[6]
    if major == 1:
        length = struct.unpack("<H", data[8:10])[0]
        start = 10
    else:
        length = struct.unpack("<I", data[8:12])[0]
        start = 12
    header = ast.literal_eval(data[start:start + length].decode("latin1"))
    code = FORMATS[header["descr"]]
    body = data[start + length:]
    count = len(body) // struct.calcsize(code)
    values = struct.unpack("<%d%s" % (count, code), body)
    text = ", ".join(str(int(v)) if isinstance(v, bool) else str(v)
                     for v in values)
    print("%s = [%s]" % (name[:-4], text))
