"""Logging of the workflow's scripts: each job logs to its ``log:`` file; SIGTERM exits cleanly."""

from __future__ import annotations

import logging
import signal
from pathlib import Path


def _terminate(signum, frame):
    """SIGTERM (snakemake interrupted) -> SystemExit, so ``finally`` blocks remove temporaries."""
    raise SystemExit(128 + signum)


def log_to(path) -> logging.Logger:
    """Send logging (and warnings) of a workflow script to its ``log:`` file; return the script's logger.

    Also turns SIGTERM into a clean exit, so an interrupted job leaves no temporary file.
    """
    signal.signal(signal.SIGTERM, _terminate)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=str(path),
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger("glfs.workflow")
