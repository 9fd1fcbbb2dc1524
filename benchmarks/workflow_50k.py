"""Write the simulated 50,000-cell dataset that benchmarks/sc50k.yaml runs through the workflow.

    python benchmarks/workflow_50k.py [--n-cells 50000] [--n-genes 2000] [--out data/sc50k.h5ad]

The data are those of the scaling benchmark (``bench.simulated.simulate_lognorm``: log-normalised
negative-binomial counts, 8 clusters with 25 marker genes each, seed 0), written
as an ``.h5ad`` with the cluster in ``obs["cluster"]``.  Then:

    snakemake --cores 2 --configfile benchmarks/sc50k.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.simulated import simulate_lognorm


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-cells", type=int, default=50_000)
    ap.add_argument("--n-genes", type=int, default=2_000)
    ap.add_argument("--out", type=Path, default=Path("data/sc50k.h5ad"))
    args = ap.parse_args(argv)
    import anndata
    import pandas as pd

    X, labels, _ = simulate_lognorm(args.n_cells, args.n_genes, seed=0)
    obs = pd.DataFrame(
        {"cluster": pd.Categorical([f"c{int(c)}" for c in labels])}, index=[f"cell{i}" for i in range(args.n_cells)]
    )
    var = pd.DataFrame(index=[f"g{j}" for j in range(args.n_genes)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".part")
    anndata.AnnData(X, obs=obs, var=var).write_h5ad(tmp)
    tmp.replace(args.out)  # nothing half-written under the final name
    print(f"wrote {args.out}: {args.n_cells} cells x {args.n_genes} genes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
