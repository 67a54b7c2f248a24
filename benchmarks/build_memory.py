"""Peak memory of building a graph, against the size of the CSR it builds.

Returns (prints) a Markdown table: per builder and scale, the CSR's bytes (indptr +
indices), the peak resident memory the build added, and their ratio. Approach: each
(builder, scale) in a fresh Python process: tiny builds first (numba's cached kernels
loaded), the input made (``from_edges``: the Kronecker edge list as int64 arrays, the
caller's; ``read_graph``: the edge list written to a text file), the resident memory
read and the kernel's peak mark reset (``/proc/self/clear_refs``, Linux), the build
run, and the peak (``VmHWM``) less that reading is what the build added. Builders:
``kronecker`` (generation included), ``from_edges``, ``read_graph`` (a whitespace edge
list written by ``np.savetxt``), ``read_graph_mtx`` and ``read_graph_npz`` (the graph
written by ``tb.save_graph`` as MatrixMarket / taskbfs ``.npz``).

    PYTHONPATH=$PWD python benchmarks/build_memory.py --scales 16 18 20
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, os, sys, tempfile
    import numpy as np
    import psutil
    import taskbfs as tb

    builder, scale = sys.argv[1], int(sys.argv[2])

    def hwm():  # peak resident bytes since the last reset
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "edges.el")
        np.savetxt(path, np.array([[0, 1], [1, 2]]), fmt="%d")
        tb.read_graph(path)
        tb.kronecker(4, seed=1)
        if builder != "kronecker":
            src, dst = tb.kronecker_edges(scale, seed=1)
        if builder == "read_graph":
            np.savetxt(path, np.column_stack([src, dst]), fmt="%d")
            del src, dst
        elif builder.startswith("read_graph_"):  # the graph saved in that format
            path = os.path.join(tmp, "graph." + builder[len("read_graph_"):])
            tb.save_graph(tb.Graph.from_edges(src, dst, num_vertices=1 << scale), path)
            del src, dst
        before = psutil.Process().memory_info().rss
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak restarts from here
        if builder == "kronecker":
            g = tb.kronecker(scale, seed=1)
        elif builder == "from_edges":
            g = tb.Graph.from_edges(src, dst, num_vertices=1 << scale)
        else:
            g = tb.read_graph(path)
        peak = hwm()
    print(json.dumps({"csr": g.indptr.nbytes + g.indices.nbytes, "before": before,
                      "peak": peak, "arcs": g.num_arcs}))
""")


def measure(builder: str, scale: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, builder, str(scale)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", type=int, nargs="+", default=[16, 18, 20])
    p.add_argument("--builders", nargs="+", default=["kronecker", "from_edges", "read_graph",
                                                      "read_graph_mtx", "read_graph_npz"])
    args = p.parse_args()
    print("| builder | scale | arcs | CSR MiB | peak added MiB | peak / CSR |")
    print("| --- | --- | --- | --- | --- | --- |")
    for builder in args.builders:
        for scale in args.scales:
            m = measure(builder, scale)
            added = m["peak"] - m["before"]
            print(f"| {builder} | {scale} | {m['arcs']:,} | {m['csr'] / 2**20:.1f} | "
                  f"{added / 2**20:.1f} | {added / m['csr']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
