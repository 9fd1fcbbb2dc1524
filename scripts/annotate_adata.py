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

from glfs.anndata_writers import write_graph
from glfs_workflow.files import DiskFullError, read_tsv, write_h5ad_atomic
from glfs_workflow.logs import log_to
from glfs_workflow.tables import annotate_selection

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    W = sp.load_npz(inp.graph)
    write_graph(adata, W)
    adata.uns["patient_similarity"] = {"params": {k: v for k, v in dict(par.graph).items() if v is not None}}
    for table, meta_path in zip(inp.tables, inp.metas):
        m = annotate_selection(adata, read_tsv(table), json.loads(Path(meta_path).read_text()), table=table, source=inp.adata)
        log.info("wrote var[%r], var[%r_score], var[%r_rank]", m, m, m)
    write_h5ad_atomic(adata, snakemake.output[0])  # noqa: F821
except DiskFullError as exc:  # one line, not h5py's error stack
    log.error("%s", exc)
    sys.stderr.write(f"annotate_adata: {exc}\n")
    raise SystemExit(1) from None
except Exception:
    log.exception("annotate_adata failed")
    raise
