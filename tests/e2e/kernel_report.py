"""The zoo's rule for `snugc compile --kernel-report=FILE.json` (issue 36):
no kernel with local (stack) or spill bytes, none over a launch limit.

snugc already refuses a launch over its arch's limits (exit 1, naming the
kernel); the limits are checked again here on the report itself, so a
report written by a snugc that stopped checking fails too. Shared by the
e2e tier (tests/e2e/run_model.py), the full zoo x precision sweep
(bench/kernel-report/run.py) and tools/gpu_prepare.py / gpu_check.py.
"""
import json

# Per-block limits every sm_75..sm_120 GPU shares (CUDA C Programming
# Guide, "Technical Specifications per Compute Capability").
MAX_THREADS_PER_BLOCK = 1024
MAX_REGISTERS_PER_THREAD = 255
MAX_REGISTERS_PER_BLOCK = 65536


def load(path):
    with open(path) as f:
        return json.load(f)


def problems(records):
    """One line per record breaking the rule, naming kernel, arch and node."""
    found = []
    for r in records:
        where = f"{r['name']} ({r['arch']}, {r.get('node', '?')})"
        if r["local_bytes"] or r["spill_bytes"]:
            found.append(f"{where}: {r['local_bytes']} B local, "
                         f"{r['spill_bytes']} B spilled per thread")
        if r["threads"] > MAX_THREADS_PER_BLOCK:
            found.append(f"{where}: {r['threads']} threads per block")
        if r["registers"] > MAX_REGISTERS_PER_THREAD:
            found.append(f"{where}: {r['registers']} registers per thread")
        if r["registers"] * r["threads"] > MAX_REGISTERS_PER_BLOCK:
            found.append(f"{where}: {r['registers']} registers x "
                         f"{r['threads']} threads > {MAX_REGISTERS_PER_BLOCK}")
    return found


def summary(records):
    """{kernels, worst registers (and its kernel), local, spill, max threads}
    over every arch of one report: the row the tables print."""
    worst = max(records, key=lambda r: r["registers"], default=None)
    return {"kernels": len({r["name"] for r in records}),
            "records": len(records),
            "max_registers": worst["registers"] if worst else 0,
            "max_registers_kernel": worst["name"] if worst else "",
            "max_threads": max((r["threads"] for r in records), default=0),
            "max_shared_bytes": max((r["shared_bytes"] for r in records),
                                    default=0),
            "local_bytes": max((r["local_bytes"] for r in records), default=0),
            "spill_bytes": max((r["spill_bytes"] for r in records), default=0),
            "framed": sum(1 for r in records
                          if r["local_bytes"] or r["spill_bytes"])}


def check(path, label):
    """Prints the summary of report `path`; prints each problem and returns
    False when there is one."""
    records = load(path)
    s = summary(records)
    print(f"kernel report ({label}): {s['kernels']} kernels, "
          f"{s['records']} records, worst {s['max_registers']} registers "
          f"({s['max_registers_kernel']}), {s['framed']} with local or "
          f"spill bytes")
    found = problems(records)
    for line in found:
        print(f"FAILED: kernel report ({label}): {line}")
    return not found
