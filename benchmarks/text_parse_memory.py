"""Peak memory of reading a text matrix, per byte of its (expanded) text (issue 30, item 8).

    nice -n 10 python benchmarks/text_parse_memory.py            # 4, 16 and 64 MB of text, two kinds
    nice -n 10 python benchmarks/text_parse_memory.py --mb 4 16  # smaller

Two kinds of gzip'd tab-separated matrices (genes x samples, one id column): ``bulk``, log-expression
values written with 4 decimals (about 7 bytes a value, as the vendored microarray sets), and
``counts``, single-cell UMI counts (90 % zeros, about 2 bytes a value, the worst case: every
value is a Python string while it is parsed).  Each file is read by
``glfs_workflow.readers.read_matrix`` in a fresh process; the peak is VmHWM (reset to the RSS after
the imports), less that RSS.  Writes benchmarks/results/text_parse_memory.tsv and .md with the load;
``glfs_workflow.memory`` takes its estimate (bytes per byte of text + bytes per value) from the largest points.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "results"

WORKER = r"""
import json, sys
from glfs_workflow.readers import read_matrix

def kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])

with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = kb("VmRSS")
m = read_matrix(sys.argv[1], max_expanded_bytes=2**40)
print(json.dumps({"base_kb": base, "peak_kb": kb("VmHWM"), "shape": list(m.X.shape)}))
"""


def write_matrix(path: Path, kind: str, target_bytes: int, seed: int = 0) -> int:
    """A gzip'd genes x samples text matrix of about ``target_bytes`` of text; returns the exact text size."""
    rng = np.random.default_rng(seed)
    n_samples = 200 if kind == "bulk" else 2000
    per_value = 7 if kind == "bulk" else 2
    n_genes = max(10, target_bytes // (n_samples * per_value))
    size = 0
    with gzip.open(path, "wt", compresslevel=1) as fh:
        head = "gene\t" + "\t".join(f"S{j}" for j in range(n_samples)) + "\n"
        fh.write(head)
        size += len(head)
        for start in range(0, n_genes, 500):
            m = min(500, n_genes - start)
            if kind == "bulk":
                vals = rng.normal(7, 2, size=(m, n_samples))
                lines = [f"G{start + i}\t" + "\t".join(f"{v:.4f}" for v in row) for i, row in enumerate(vals)]
            else:
                vals = rng.poisson(0.12, size=(m, n_samples))
                lines = [f"G{start + i}\t" + "\t".join(map(str, row)) for i, row in enumerate(vals)]
            block = "\n".join(lines) + "\n"
            fh.write(block)
            size += len(block)
    return size


def measure(path: Path) -> dict:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([sys.executable, "-c", WORKER, str(path)], capture_output=True, text=True, env=env, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[4, 16, 64], help="text sizes in MB (2**20 bytes)")
    args = ap.parse_args()
    load0 = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("bulk", "counts"):
            for mb in args.mb:
                path = Path(tmp) / f"{kind}_{mb:g}.tsv.gz"
                text = write_matrix(path, kind, int(mb * 2**20))
                r = measure(path)
                peak = (r["peak_kb"] - r["base_kb"]) * 1024
                rows.append(
                    {
                        "kind": kind,
                        "text_bytes": text,
                        "gzip_bytes": path.stat().st_size,
                        "shape": "x".join(map(str, r["shape"])),
                        "base_rss_mb": round(r["base_kb"] / 1024, 1),
                        "parse_peak_mb": round(peak / 2**20, 1),
                        "peak_per_text_byte": round(peak / text, 2),
                    }
                )
                print(rows[-1], flush=True)
    load1 = os.getloadavg()
    df = pd.DataFrame(rows)
    df["load_before"], df["load_after"] = round(load0[0], 1), round(load1[0], 1)
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / "text_parse_memory.tsv", sep="\t", index=False)
    table = df.drop(columns=["load_before", "load_after"]).to_markdown(index=False)
    text = (
        "# Peak memory of reading a text matrix, per byte of text\n\n"
        f"`read_matrix` on gzip'd tab-separated matrices in a fresh process each; peak = VmHWM less the RSS after the imports. "
        f"{os.cpu_count()} CPUs, load {load0[0]:.1f} before, {load1[0]:.1f} after.\n\n{table}\n\n"
        f"Largest peak per byte of text: {df['peak_per_text_byte'].max():.2f} "
        f"({df.loc[df['peak_per_text_byte'].idxmax(), 'kind']}).\n"
    )
    (OUT / "text_parse_memory.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
