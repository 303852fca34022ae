"""check_kernel_report.py CUOBJDUMP REPORT DIR STEM: checks every record of
`snugc compile --kernel-report=REPORT` against `cuobjdump --dump-resource-
usage` of the cubins --dump-cuda DIR wrote (DIR/STEM.sm_XX.cubin): the
registers (REG), static shared bytes (SHARED) and per-thread stack (STACK)
snug read from each cubin must be cuobjdump's, for every kernel and arch.
Prints one line per arch and exits 1 naming the first difference."""
import json
import re
import subprocess
import sys

cuobjdump, report_path, directory, stem = sys.argv[1:5]
records = json.load(open(report_path))
by_arch = {}
for record in records:
    by_arch.setdefault(record["arch"], []).append(record)
if not by_arch:
    sys.exit("the kernel report is empty")

for arch, kernels in sorted(by_arch.items()):
    cubin = f"{directory}/{stem}.{arch}.cubin"
    text = subprocess.run([cuobjdump, "--dump-resource-usage", cubin],
                          check=True, capture_output=True, text=True).stdout
    usage = {}
    for name, fields in re.findall(r"Function (\S+):\n\s+(.*)", text):
        usage[name] = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", fields))
    for record in kernels:
        found = usage.get(record["name"])
        if found is None:
            sys.exit(f"{arch}: cuobjdump lists no function {record['name']}")
        for ours, theirs in [("registers", "REG"), ("shared_bytes", "SHARED"),
                             ("local_bytes", "STACK")]:
            if record[ours] != int(found[theirs]):
                sys.exit(f"{arch} {record['name']}: {ours} = {record[ours]}, "
                         f"cuobjdump {theirs} = {found[theirs]}")
    print(f"{arch}: {len(kernels)} kernels match cuobjdump "
          f"(max {max(r['registers'] for r in kernels)} registers)")
