"""Rule make_report: {report_dir}/report.html (self-contained), its figures as PNG files and {report_dir}/which_method.md.

Before writing, reads the record of the configuration that made the report there
(params.record); when it was another configuration, says so in the log, on stderr
and at the top of the new report.  Then records this configuration.
"""

import sys
from pathlib import Path

from glfs_workflow.files import DiskFullError, atomic_path
from glfs_workflow.logs import log_to
from glfs_workflow.record import replaced_message, replaced_report, write_report_record
from glfs_workflow.report import build_report, nest_inputs

log = log_to(snakemake.log[0])  # noqa: F821
try:
    par = snakemake.params  # noqa: F821
    out = snakemake.output  # noqa: F821
    config = dict(par.config)
    previous = replaced_report(par.record, config)
    if previous:
        msg = replaced_message(previous, out.html)
        log.warning("%s", msg)
        sys.stderr.write(f"make_report: WARNING: {msg}\n")
    figures = {Path(p).stem: p for p in out.figures}
    html = build_report(
        nest_inputs(dict(snakemake.input.items())),
        run=dict(par.run),
        config=config,  # noqa: F821
        benchmarks=list(par.benchmarks),
        figures_out=figures,
        which_method_out=out.which,
        replaced=previous,
    )  # noqa: F821
    with atomic_path(out.html) as tmp:
        Path(tmp).write_text(html, encoding="utf-8")
    write_report_record(par.record, config, report_html=out.html)
    log.info("report: %d characters, %d figures; configuration recorded in %s", len(html), len(figures), par.record)
except DiskFullError as exc:  # one line, not a traceback
    log.error("%s", exc)
    sys.stderr.write(f"make_report: {exc}\n")
    raise SystemExit(1) from None
except Exception:
    log.exception("make_report failed")
    raise
