"""Cost of the single-cell Leiden evaluation (glfs.evaluate.evaluate_ranking_leiden): an old commit against this tree.

    python benchmarks/leiden_cost.py --old 684cafc            # old = that commit's src/, new = this tree's
    python benchmarks/leiden_cost.py --old 684cafc --rounds 3

Each side evaluates the same rankings in a fresh process, as a workflow job does (imports and numba's
compilation count): the vendored mouse-bladder cells (2,100 x 20,670, normalize_total + log1p, CSR), the
config's ``leiden:`` defaults (gene counts 200-2,000, 3 runs, 10 resolutions), two rankings (top variance,
a seeded random order).  Sides run interleaved (old, new, old, new, ...) on a shared machine, so the
result is the old/new ratio of each round, with the load beside it.  The two sides' records must be
equal (floats to the last digit), or the script stops.  Writes benchmarks/results/leiden_cost.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.settings import RESULTS, ROOT

CHILD = """
import hashlib, json, time
t0 = time.perf_counter()
import anndata, numpy as np, scanpy as sc
from glfs.evaluate import evaluate_ranking_leiden
a = anndata.read_h5ad("resources/singlecell/mouse_bladder_2100.h5ad")
sc.pp.normalize_total(a)
sc.pp.log1p(a)
X = a.X.tocsr()
labels = np.asarray(a.obs["cell_type"].astype(str))
var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - np.asarray(X.mean(axis=0)).ravel() ** 2
rankings = [np.argsort(-var, kind="stable"), np.random.default_rng(0).permutation(X.shape[1])]
t1 = time.perf_counter()
recs = [evaluate_ranking_leiden(X, labels, r, feature_grid=(200, 500, 1000, 2000), random_state=0) for r in rankings]
t2 = time.perf_counter()
print(json.dumps({"process_s": t2 - t0, "evaluate_s": t2 - t1,
                  "records": hashlib.sha256(repr(recs).encode()).hexdigest()}))
"""


def run(src: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="git commit of the old side")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(f"git archive {args.old} src | tar -x -C {tmp}", shell=True, cwd=ROOT, check=True)
        sides = {"old": Path(tmp) / "src", "new": ROOT / "src"}
        lines = []
        for i in range(args.rounds):
            load = os.getloadavg()[0]
            got = {side: run(src) for side, src in sides.items()}
            if got["old"]["records"] != got["new"]["records"]:
                msg = f"round {i}: the records differ between {args.old} and this tree"
                raise SystemExit(msg)
            lines.append(
                f"| {i} | {load:.1f} | {os.getloadavg()[0]:.1f} | "
                + " | ".join(f"{got[s]['process_s']:.1f} / {got[s]['evaluate_s']:.1f}" for s in sides)
                + f" | {got['old']['process_s'] / got['new']['process_s']:.2f}"
                f" | {got['old']['evaluate_s'] / got['new']['evaluate_s']:.2f} |"
            )
            print(lines[-1], flush=True)
    head = (
        f"# Leiden evaluation cost: {args.old} (old) against this tree (new)\n\n"
        "2 rankings x 4 gene counts x 3 runs x 10 resolutions on 2,100 bladder cells, each side a fresh\n"
        "process (seconds: whole process / evaluate_ranking_leiden calls); records equal on both sides.\n\n"
        "| round | load before | load after | old s | new s | old/new process | old/new evaluate |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    (RESULTS / "leiden_cost.md").write_text(head + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
