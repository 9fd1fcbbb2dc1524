"""Rule fetch_dataset: resolve (mirror or download) and verify one dataset's files.

Thin: opens the log, reads snakemake params, calls glfs.io, writes the
provenance record atomically.  On any error nothing is written.
"""

import logging
import signal
import sys

from glfs.io import fetch_dataset_files, write_json_atomic


def _terminate(signum, frame):
    """SIGTERM (snakemake interrupted) -> SystemExit, so temporary files are removed."""
    raise SystemExit(128 + signum)


def main(smk):
    signal.signal(signal.SIGTERM, _terminate)
    logging.basicConfig(
        filename=smk.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("fetch_dataset")
    try:
        prov = fetch_dataset_files(smk.wildcards.dataset, smk.params.dataset, smk.params.fetch)
    except Exception as exc:
        log.error("%s", exc)
        sys.stderr.write(f"fetch_dataset {smk.wildcards.dataset}: {exc}\n")
        raise SystemExit(1) from None
    write_json_atomic(prov, smk.output.provenance)
    log.info("wrote %s", smk.output.provenance)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
