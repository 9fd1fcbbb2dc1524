"""Rule compare_glfs_greedy: the well-posed GLFS against greedy LapAOFS on the same criterion.

For k in the configured list (capped at the number of genes), one call of
glfs.designs.budgeted.glfs_design with the workflow's graph and GLFS parameters
(selection.params.glfs) gives both the criterion Tr(H_S^-1) of its answer and
that of its greedy start, which is greedy LapAOFS on the same criterion, X and
lambdas (He et al. 2011, Eq. 12, 17-20).  Lower is better; ``pct_lower`` is how
much lower glfs is than greedy, in percent (>= 0 by construction: the exchange
starts at the greedy set and only accepts improving swaps).

Output results/{dataset}/glfs_vs_greedy.tsv: k, greedy_criterion, criterion,
pct_lower, n_swaps, converged, lambda1, lambda2 (run time: logs/benchmarks/compare_glfs_greedy/).
"""

import anndata
import pandas as pd
import scipy.sparse as sp

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs.designs.budgeted import glfs_design

COLUMNS = ["k", "greedy_criterion", "criterion", "pct_lower", "n_swaps", "converged", "lambda1", "lambda2"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    W = sp.load_npz(inp.graph).tocsr()
    X = adata.X.toarray() if hasattr(adata.X, "toarray") else adata.X
    rows = []
    for k in sorted({int(min(k, adata.n_vars)) for k in par.ks}):
        res = glfs_design(X, W, k, **dict(par.method_params))
        g, c = float(res.greedy_criterion), float(res.criterion)
        rows.append({
            "k": int(res.selected.size),
            "greedy_criterion": g,
            "criterion": c,
            "pct_lower": 100.0 * (g - c) / g,
            "n_swaps": int(res.n_swaps),
            "converged": bool(res.converged),
            "lambda1": float(res.params["lambda1"]),
            "lambda2": float(res.params["lambda2"]),
        })
        log.info("k=%d: greedy %.6g, glfs %.6g (%.3g%% lower), %d swaps, converged %s", k, g, c, rows[-1]["pct_lower"],
                 res.n_swaps, res.converged)
    df = pd.DataFrame(rows, columns=COLUMNS).drop_duplicates("k")  # k capped at the non-constant genes
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("compare_glfs_greedy failed")
    raise
