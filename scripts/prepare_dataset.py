"""Rule prepare_dataset: read, label, preprocess and check one dataset.

Thin: opens the log, reads snakemake input/params, calls glfs_workflow (datasets, fetch), writes
results/{dataset}/prepared.h5ad atomically.  On any error nothing is written.
"""

import json
import logging
import sys
import warnings

from glfs_workflow.datasets import prepare_dataset
from glfs_workflow.fetch import check_provenance
from glfs_workflow.files import write_h5ad_atomic
from glfs_workflow.logs import log_to


def main(smk):
    log_to(smk.log[0])  # log file, warnings captured, SIGTERM -> clean exit
    log = logging.getLogger("prepare_dataset")
    name = smk.wildcards.dataset
    with open(smk.input.provenance) as fh:
        prov = json.load(fh)
    try:
        paths = check_provenance(prov, smk.input.provenance)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            # no graph check here (graph.n_neighbors is not a param of this rule, so changing
            # a graph setting does not re-run it): build_graph checks k < n_samples
            adata = prepare_dataset(
                name,
                smk.params.dataset,
                paths,
                provenance=prov,
                max_expanded_gb=smk.params.max_expanded_gb,
                mem_mb=smk.resources.mem_mb,
            )
        write_h5ad_atomic(adata, smk.output.h5ad)  # a full disk: one DiskFullError line, no traceback
    except Exception as exc:
        # every message says something: a MemoryError (or any error) without text names its type
        text = str(exc).strip() or f"{type(exc).__name__} (no further message) while preparing dataset {name!r}"
        log.error("%s", text)
        sys.stderr.write(f"prepare_dataset {name}: {text}\n")
        raise SystemExit(1) from None
    log.info("wrote %s: %d samples x %d genes", smk.output.h5ad, adata.n_obs, adata.n_vars)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
