"""Rule annotate_adata: prepared.h5ad + every method's selection -> results/{dataset}/adata.h5ad.

Layout: the same as glfs.tl.select (README, "Outputs").  Methods with weights keep
them in var[f"{method}_weight"]; the well-posed GLFS (method "glfs", the
recommended one) is under the plain key "glfs": var["glfs"], var["glfs_score"],
var["glfs_rank"], var["glfs_weight"].
"""

import json
import sys
from pathlib import Path

import anndata
import scipy.sparse as sp

from glfs._anndata import write_graph, write_selection
from glfs_workflow.files import atomic_path, read_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import selection_from_table
from glfs_workflow.files import DiskFullError

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    W = sp.load_npz(inp.graph)
    write_graph(adata, W)
    adata.uns["patient_similarity"] = {"params": {k: v for k, v in dict(par.graph).items() if v is not None}}
    for table, meta_path in zip(inp.tables, inp.metas):
        meta = json.loads(Path(meta_path).read_text())
        df = read_tsv(table)
        if list(df["gene"]) != list(adata.var_names):  # read_tsv reads ids as exact text
            diff = [i for i, (a, b) in enumerate(zip(df["gene"], adata.var_names)) if a != b]
            where = f"row {diff[0] + 2}: {df['gene'].iloc[diff[0]]!r} vs {adata.var_names[diff[0]]!r}" if diff else f"{len(df)} rows vs {adata.n_vars} genes"
            msg = f"{table}: genes differ from {inp.adata} var_names ({where})"
            raise ValueError(msg)
        sel = selection_from_table(df, meta)
        m = sel.method
        write_selection(
            adata,
            sel,
            key=m,
            weight_key=f"{m}_weight",
            uns_params={"n_features": meta["n_features"], "graph": "obsp:patient_similarity" if meta["graph"] != "none" else "none"},
        )
        log.info("wrote var[%r], var[%r_score], var[%r_rank]", m, m, m)
    with atomic_path(snakemake.output[0]) as tmp:  # noqa: F821
        adata.write_h5ad(tmp)
except DiskFullError as exc:  # one line, not h5py's error stack
    log.error("%s", exc)
    sys.stderr.write(f"annotate_adata: {exc}\n")
    raise SystemExit(1) from None
except Exception:
    log.exception("annotate_adata failed")
    raise
