"""files-make-inputs.py KIND OUT: writes a test input for the files-*.test
cases. chain-ir: a 600-node Relu chain (about 19 KiB of IR, past the
16 KiB LLVM maps a file at). weight-ir: a planned module with a 4 KiB
weight (a bundle past a 2 KiB file-size limit); weight-onnx: the same as
a text ONNX model."""
import sys

kind, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    if kind == "chain-ir":
        f.write("func @big(%x: f32[1,4]) -> f32[1,4] {\n")
        for i in range(600):
            operand = "%x" if i == 0 else f"%r{i - 1}"
            f.write(f"  %r{i} = Relu({operand}) : f32[1,4]\n")
        f.write("  return %r599\n}\n")
    elif kind == "weight-ir":
        values = ", ".join(f"{i * 0.5}" for i in range(1024))
        f.write(f"func @weighty(%x: f32[1024], %w: f32[1024] weight = [{values}]) -> f32[1024] {{\n")
        f.write("  %y = Add(%x, %w) : f32[1024]\n  return %y\n}\n")
    elif kind == "weight-onnx":
        values = " ".join(f"float_data: {i * 0.5}" for i in range(1024))
        f.write('ir_version: 8\nopset_import { domain: "" version: 13 }\n'
                'graph {\n  name: "weighty"\n'
                '  node { name: "add" op_type: "Add" input: "x" input: "w" output: "y" }\n'
                f'  initializer {{ name: "w" data_type: 1 dims: 1024 {values} }}\n'
                '  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1024 } } } } }\n'
                '  output { name: "y" type { tensor_type { elem_type: 1 } } }\n}\n')
    else:
        sys.exit(f"unknown kind {kind}")
