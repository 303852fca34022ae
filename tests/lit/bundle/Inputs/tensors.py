"""Writes .npy and ONNX TensorProto (.pb) files with the standard library only,
so the bundle lit tests need neither numpy nor onnx."""
import struct

# dtype name -> (npy descr, struct code, ONNX data_type)
TYPES = {
    "f32": ("<f4", "f", 1),
    "f64": ("<f8", "d", 11),
    "i64": ("<i8", "q", 7),
    "i32": ("<i4", "i", 6),
    "bool": ("|b1", "?", 9),
}


def _pack(dtype, values):
    code = TYPES[dtype][1]
    return struct.pack("<%d%s" % (len(values), code), *values)


def write_npy(path, dtype, shape, values):
    shape_text = "(" + "".join("%d," % d for d in shape) + ")"
    if len(shape) > 1:
        shape_text = "(" + ", ".join(str(d) for d in shape) + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        TYPES[dtype][0], shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(_pack(dtype, values))


def _varint(value):
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def write_pb(path, dtype, shape, values, name=""):
    """A TensorProto with dims (1), data_type (2), name (8), raw_data (9)."""
    out = bytearray()
    for d in shape:
        out += _varint(1 << 3 | 0) + _varint(d)
    out += _varint(2 << 3 | 0) + _varint(TYPES[dtype][2])
    if name:
        out += _varint(8 << 3 | 2) + _varint(len(name)) + name.encode()
    raw = _pack(dtype, values)
    out += _varint(9 << 3 | 2) + _varint(len(raw)) + raw
    with open(path, "wb") as f:
        f.write(bytes(out))


def write_pb_float_data(path, shape, values):
    """A TensorProto with packed float_data (field 4) instead of raw_data."""
    out = bytearray()
    for d in shape:
        out += _varint(1 << 3 | 0) + _varint(d)
    out += _varint(2 << 3 | 0) + _varint(1)
    data = _pack("f32", values)
    out += _varint(4 << 3 | 2) + _varint(len(data)) + data
    with open(path, "wb") as f:
        f.write(bytes(out))
