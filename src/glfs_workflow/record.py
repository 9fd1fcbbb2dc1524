"""The configuration that made a report: its digest and the record kept beside the report.

Used by ``workflow/rules/report.smk`` (which config keys the report takes) and
``scripts/make_report.py``; not part of the stable API.  Plain Python (json,
hashlib): the Snakefile imports it when the rules are defined.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path

#: Config keys that do not change what a report says (compute resources): left out of its digest,
#: and not passed to the make_report rule, so that editing them does not rerun it.
DIGEST_IGNORES = ("resources",)


def report_config(config: dict) -> dict:
    """The configuration as the report takes it: ``config`` without :data:`DIGEST_IGNORES`."""
    return {k: v for k, v in config.items() if k not in DIGEST_IGNORES}


def config_digest(config: dict) -> str:
    """sha256 (hex) of a configuration, keys sorted, without :data:`DIGEST_IGNORES`: two runs with
    the same digest make the same report from the same inputs."""
    plain = report_config(config)
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def write_report_record(path, config: dict, *, report_html) -> None:
    """Record which configuration made a report: a small JSON file beside it (config_sha256, run, report,
    created).  Read back by :func:`replaced_report` when the next report is written there."""
    from .files import atomic_path

    record = {
        "config_sha256": config_digest(config),
        "run": list(config.get("run") or []),
        "report": str(report_html),
        "created": _now(),
    }
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def replaced_report(path, config: dict) -> dict | None:
    """The record (:func:`write_report_record`) of a report made by another configuration, or None.

    None when there is no record or it names the same configuration as ``config``; an
    unreadable record is returned as ``{"config_sha256": None, ...}`` (an unknown configuration).
    """
    p = Path(path)
    if not p.exists():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        return {"config_sha256": None, "run": [], "created": None, "error": f"{p}: {e}"}
    if record.get("config_sha256") == config_digest(config):
        return None
    return {
        "config_sha256": record.get("config_sha256"),
        "run": list(record.get("run") or []),
        "created": record.get("created"),
    }


def replaced_message(previous: dict, report_html) -> str:
    """One sentence for the log, the terminal and the top of the report: ``report_html`` replaced a
    report made by another configuration (``previous``)."""
    digest = previous.get("config_sha256")
    if digest:
        who = (
            f"another configuration (sha256 {digest[:12]}, datasets {', '.join(previous.get('run') or []) or 'none'}"
            + (f", made {previous['created']}" if previous.get("created") else "")
            + ")"
        )
    else:
        who = "a configuration whose record could not be read"
    return (
        f"{report_html} replaced a report made by {who}; set report_dir in your configuration to give "
        "each configuration a report of its own."
    )
