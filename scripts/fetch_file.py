"""Rule fetch_dataset: resolve (mirror or download) and verify one dataset's files.

Thin: opens the log, reads snakemake params, calls glfs_workflow (datasets, fetch), writes the
provenance record atomically.  On any error nothing is written.
"""

import logging
import sys

from glfs_workflow.fetch import fetch_dataset_files
from glfs_workflow.files import write_json_atomic
from glfs_workflow.logs import log_to


def main(smk):
    log_to(smk.log[0])  # log file, warnings captured, SIGTERM -> clean exit
    log = logging.getLogger("fetch_dataset")
    try:
        prov = fetch_dataset_files(smk.wildcards.dataset, smk.params.dataset, smk.params.fetch)
        write_json_atomic(prov, smk.output.provenance)  # a full disk: one DiskFullError line
    except Exception as exc:
        # every message says something: a MemoryError (or any error) with an empty text gets its type
        text = (
            str(exc).strip()
            or f"{type(exc).__name__} (no further message) while fetching the files of dataset {smk.wildcards.dataset!r}"
        )
        log.error("%s", text)
        sys.stderr.write(f"fetch_dataset {smk.wildcards.dataset}: {text}\n")
        raise SystemExit(1) from None
    log.info("wrote %s", smk.output.provenance)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
