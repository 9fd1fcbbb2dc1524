"""The report's inputs, read once: one typed record per dataset of the run, before any section is made.

Used by :func:`glfs_workflow.report.collect`; not part of the stable API.  :func:`read_dataset` reads
every file of a dataset the rule names (the kinds of the workflow's RESULT, ``common.smk``, plus the
selection tables and JSON sidecars by method) and computes what several sections share (the
which-method answers, the GLFS paths); the sections (:mod:`glfs_workflow.sections`) are then
functions of these records and read no file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import findings as F
from .files import read_tsv
from .tables import FAILED, split_failed
from .which import WhichMethod, which_method

#: Result tables of a dataset, by the kind the rule names them (RESULT in common.smk).
TABLE_KINDS = (
    "clustering",
    "random_floor",
    "leiden",
    "leiden_random",
    "glfs_path",
    "glfs_vs_greedy",
    "sensitivity",
    "classification",
)
#: The protocols of the which-method answer: protocol -> (results kind, random-floor kind).
PROTOCOL_KINDS = {"spectral": ("clustering", "random_floor"), "leiden": ("leiden", "leiden_random")}


def read_tsv_or_none(path) -> pd.DataFrame | None:
    """A result table (ids such as genes and methods read as text), or None when there is no such file."""
    if not path or not Path(path).exists():
        return None
    return read_tsv(Path(path))


@dataclass(frozen=True)
class Provenance:
    """A dataset's provenance.json: its path, and the record read (or why it could not be read)."""

    path: str | None
    found: bool = False  # the file exists
    record: dict | None = None
    error: str | None = None


@dataclass(frozen=True)
class DatasetResults:
    """Everything the report shows of one dataset, read from its files once.

    ``given`` holds the kinds of result file the rule names for the dataset (a kind not given is not
    shown); ``tables`` the tables read of those kinds (None for a file that does not exist).
    """

    name: str
    labelled: bool
    methods: tuple[str, ...]
    heatmap_method: str | None
    adata: object  # anndata.AnnData, in memory
    given: frozenset[str]
    tables: dict[str, pd.DataFrame | None]  # kind -> table
    selections: dict[str, pd.DataFrame]  # method -> selection table (those that exist)
    metas: dict[str, dict]  # method -> JSON sidecar (those that could be read)
    provenance: Provenance
    which: dict[str, WhichMethod | None] = field(default_factory=dict)  # protocol -> answer (labelled datasets)
    failed: dict[str, str] = field(default_factory=dict)  # method -> why it failed on the dataset (not evaluated)

    def table(self, kind: str) -> pd.DataFrame | None:
        """The table of a kind (None when not given or not found)."""
        return self.tables.get(kind)

    @property
    def paths(self) -> dict[str, pd.DataFrame]:
        """method -> the lam path of a published GLFS reading (glfs_workflow.findings.path_frame)."""
        return {m: pf for m, meta in self.metas.items() for pf in [F.path_frame(meta)] if pf is not None}


def _provenance(path) -> Provenance:
    if not path or not Path(path).exists():
        return Provenance(path)
    try:
        return Provenance(path, found=True, record=json.loads(Path(path).read_text()))
    except (OSError, ValueError) as e:
        return Provenance(path, found=True, error=str(e))


def _metas(paths: dict) -> dict:
    out = {}
    for m, p in paths.items():
        try:
            out[m] = json.loads(Path(p).read_text())
        except (OSError, ValueError):
            continue
    return out


def read_dataset(files: dict, facts: dict, supervised) -> DatasetResults:
    """One dataset's record from its named files (kind -> path; ``selections`` and ``metas``: method -> path)
    and its facts in the run (``name``, ``labelled``, ``methods``, ``heatmap_method``)."""
    import anndata

    methods = tuple(facts.get("methods") or ())
    labelled = bool(facts.get("labelled"))
    given = frozenset(k for k in files if k not in ("selections", "metas"))
    selections = {m: p for m in methods for p in [(files.get("selections") or {}).get(m)] if p}
    tables = {k: read_tsv_or_none(files[k]) for k in TABLE_KINDS if k in given}
    failed = {}  # method -> why it failed in the selection job (its sidecar; its evaluation rows)
    for kind in ("clustering", "leiden"):
        if tables.get(kind) is not None:
            tables[kind], more = split_failed(tables[kind])
            failed.update(more)
    metas = _metas({m: p for m in methods for p in [(files.get("metas") or {}).get(m)] if p})
    failed.update({m: str(meta.get("error", "")) for m, meta in metas.items() if meta.get("status") == FAILED})
    adata = anndata.read_h5ad(files["adata"]) if files.get("adata") and Path(files["adata"]).exists() else None
    which = {}
    if labelled:
        for protocol, (res, floor) in PROTOCOL_KINDS.items():
            if res in given:
                which[protocol] = which_method(
                    tables[res],
                    tables.get(floor),
                    protocol=protocol,
                    n_genes=None if adata is None else int(adata.n_vars),
                    supervised=supervised,
                )
    return DatasetResults(
        name=facts["name"],
        labelled=labelled,
        methods=methods,
        heatmap_method=facts.get("heatmap_method"),
        adata=adata,
        given=given,
        tables=tables,
        selections={
            m: t for m, p in selections.items() if m not in failed for t in [read_tsv_or_none(p)] if t is not None
        },
        metas={m: meta for m, meta in metas.items() if m not in failed},
        provenance=_provenance(files.get("provenance")),
        which=which,
        failed={m: failed[m] for m in methods if m in failed},
    )


def read_datasets(inputs: dict, run: dict, supervised) -> list[DatasetResults]:
    """The record of every dataset of the run (``run["datasets"]``), from the nested named inputs."""
    return [
        read_dataset((inputs.get("datasets") or {}).get(d["name"], {}), d, supervised)
        for d in run.get("datasets") or []
    ]
