"""The result tables of a run: ``run_benchmarks.tsv``, ``run_benchmarks_agreement.tsv``, ``run_benchmarks_run_info.json``.

:class:`RunResults` holds everything ``run_benchmarks.md`` is made from; it is
either the run just measured (:mod:`bench.measure`) or read back from the
files of an earlier run (:func:`load_results`, for ``--summary-only``).
``--quick`` runs write the same files with the suffix ``_quick``.  Every file is
named after the script that writes it (:func:`result_path`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bench.settings import GROUPS

ID_COLS = ["group", "case", "impl", "dataset", "n_samples", "n_features", "status"]
NUMERIC_COLS = [
    "time_s",
    "time_first_s",
    "cpu_first_s",
    "repeats",
    "peak_rss_mb",
    "peak_delta_mb",
    "rss_before_mb",
    "predicted_mb",
    "wall_s",
    "load1",
]
COLS = ID_COLS + NUMERIC_COLS + ["run_at", "note", "extra"]  # columns of run_benchmarks.tsv, in order
NUMERIC = set(NUMERIC_COLS)
LIMITS = ("timeout", "method_timeout", "max_mem_gb")  # the run's limits, kept in run_benchmarks_run_info.json
SIG_DIGITS_BELOW = 1e4  # floats under this are written with 4 significant digits, larger ones as integers
UNKNOWN_GROUP_RANK = 99  # rows of a group not in GROUPS sort last


@dataclass
class RunResults:
    """Everything a summary is made from: rows, agreement checks, run description and the run's settings."""

    rows: list = field(default_factory=list)  # one dict per case (columns COLS)
    agreement: list = field(default_factory=list)  # one dict per agreement input
    dinfo: dict = field(default_factory=dict)  # {dataset: {"shape": (n, d), "source": str}}
    minfo: dict = field(default_factory=dict)  # machine_info() plus load_start, load_end, threads
    avail: dict = field(default_factory=dict)  # {method: True or import error}
    idle: dict = field(default_factory=dict)  # the idle worker's result (rss_mb)
    total: float = 0.0  # wall seconds of the run
    only: list = field(default_factory=lambda: list(GROUPS))  # groups run
    quick: bool = False
    timeout: float = 0.0
    method_timeout: float = 0.0
    max_mem_gb: float = 0.0


def suffix(quick):
    return "_quick" if quick else ""


#: The files of a run by kind, each named after the script that writes them (run_benchmarks.py).
RESULT_NAMES = {
    "rows": "run_benchmarks{sfx}.tsv",
    "agreement": "run_benchmarks_agreement{sfx}.tsv",
    "run_info": "run_benchmarks_run_info{sfx}.json",
    "summary": "run_benchmarks{sfx}.md",
}


def result_path(out: Path, kind: str, quick: bool) -> Path:
    """The file of ``kind`` (a key of :data:`RESULT_NAMES`) in ``out`` for a full or ``--quick`` run."""
    return Path(out) / RESULT_NAMES[kind].format(sfx=suffix(quick))


# --------------------------------------------------------------------------- reading
def parse_cell(key, v):
    """A TSV cell back to its value: JSON for 'extra', floats for numbers (NaN for empty)."""
    if key == "extra":
        return json.loads(v) if v else {}
    if key in NUMERIC or key not in COLS:
        try:
            return float(v) if v != "" else float("nan")
        except ValueError:
            return v
    return v


def read_tsv(path):
    """Rows of a TSV written by this harness, as dicts."""
    with open(path) as fh:
        head = fh.readline().rstrip("\n").split("\t")
        return [
            {k: parse_cell(k, v) for k, v in zip(head, line.rstrip("\n").split("\t"))} for line in fh if line.strip()
        ]


def read_agreement(path):
    """Rows of run_benchmarks_agreement.tsv (status 'ok' where the file has none)."""
    return [{**a, "status": a.get("status", "ok")} for a in read_tsv(path)]


def load_results(out: Path, quick: bool) -> RunResults:
    """The results of an earlier run from ``out`` (the rows, the agreement and the run info)."""
    info = json.loads(result_path(out, "run_info", quick).read_text())
    agr = result_path(out, "agreement", quick)
    for v in info["dinfo"].values():
        v["shape"] = tuple(v["shape"])
    return RunResults(
        rows=read_tsv(result_path(out, "rows", quick)),
        agreement=read_agreement(agr) if agr.exists() else [],
        dinfo=info["dinfo"],
        minfo=info["minfo"],
        avail=info["avail"],
        idle=info["idle"],
        total=info["total"],
        only=info["only"],
        quick=quick,
        **{k: info[k] for k in LIMITS},
    )


# --------------------------------------------------------------------------- writing
def fmt_cell(v):
    """A value as a TSV cell: 4 significant digits for floats (integers from 1e4), '' for NaN."""
    if isinstance(v, float):
        if v != v:
            return ""
        return f"{v:.4g}" if abs(v) < SIG_DIGITS_BELOW else f"{v:.0f}"
    return str(v)


def _clean(cell):
    return cell.replace("\t", " ").replace("\n", " ")


def _group_rank(row):
    return GROUPS.index(row["group"]) if row["group"] in GROUPS else UNKNOWN_GROUP_RANK


def merge_saved(res: RunResults, out: Path) -> None:
    """Partial run (``--only``): keep the other groups' rows (and agreement) from the saved files."""
    tsv = result_path(out, "rows", res.quick)
    if set(res.only) == set(GROUPS) or not tsv.exists():
        return
    old = [r for r in read_tsv(tsv) if r.get("group") not in res.only]
    res.rows = sorted(old + res.rows, key=_group_rank)
    agr = result_path(out, "agreement", res.quick)
    if "ls_agreement" not in res.only and agr.exists() and not res.agreement:
        res.agreement = read_agreement(agr)


def write_benchmarks_tsv(rows, path):
    with open(path, "w") as fh:
        fh.write("\t".join(COLS) + "\n")
        for r in rows:
            cells = [json.dumps(r.get(c) or {}) if c == "extra" else fmt_cell(r.get(c, "")) for c in COLS]
            fh.write("\t".join(_clean(x) for x in cells) + "\n")


def write_agreement_tsv(agreement, path):
    keys = sorted({k for a in agreement for k in a if k not in ("wall_s",)})
    keys.remove("dataset")
    keys = ["dataset", *keys]
    with open(path, "w") as fh:
        fh.write("\t".join(keys) + "\n")
        for a in agreement:
            fh.write("\t".join(fmt_cell(a.get(k, "")) for k in keys) + "\n")


def write_run_info(res: RunResults, path):
    info = {
        "minfo": res.minfo,
        "dinfo": res.dinfo,
        "avail": res.avail,
        "idle": res.idle,
        "total": res.total,
        "only": list(res.only),
        **{k: getattr(res, k) for k in LIMITS},
    }
    path.write_text(json.dumps(info, indent=1, default=str) + "\n")


def save_tables(res: RunResults, out: Path) -> None:
    """Stamp the new rows with the run's date, merge a partial run with the saved rows, write the tables."""
    out.mkdir(parents=True, exist_ok=True)
    for r in res.rows:
        r["run_at"] = res.minfo["date"]
    merge_saved(res, out)
    write_benchmarks_tsv(res.rows, result_path(out, "rows", res.quick))
    if res.agreement and "ls_agreement" in res.only:
        write_agreement_tsv(res.agreement, result_path(out, "agreement", res.quick))
    write_run_info(res, result_path(out, "run_info", res.quick))
