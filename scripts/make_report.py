"""Rule make_report: results/report.html (self-contained), its figures as PNG files and results/which_method.md."""

import sys
from pathlib import Path

from glfs_workflow.files import atomic_path
from glfs_workflow.logs import log_to
from glfs_workflow.report import build_report
from glfs_workflow.files import DiskFullError

log = log_to(snakemake.log[0])  # noqa: F821
try:
    par = snakemake.params  # noqa: F821
    html = build_report(dict(par.layout), dict(par.config), figures_out=dict(par.figures),
                        which_method_out=snakemake.output.which)  # noqa: F821
    with atomic_path(snakemake.output.html) as tmp:  # noqa: F821
        Path(tmp).write_text(html, encoding="utf-8")
    log.info("report: %d characters, %d figures", len(html), len(par.figures))
except DiskFullError as exc:  # one line, not a traceback
    log.error("%s", exc)
    sys.stderr.write(f"make_report: {exc}\n")
    raise SystemExit(1) from None
except Exception:
    log.exception("make_report failed")
    raise
