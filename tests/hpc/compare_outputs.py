"""Compare the results/ trees of two workflow runs (e.g. SLURM vs local).

    python tests/hpc/compare_outputs.py RUN_A/results RUN_B/results

Exit status 0 when both runs produced the same files with the same content,
1 otherwise.  How each kind of file is compared:

- ``.tsv``/``.csv``/``.txt``: byte-for-byte; when the bytes differ, the tables
  are read with pandas and must be exactly equal (same columns, index, dtypes
  and values, NaN == NaN) -- reported as "equal by content";
- ``.h5ad``: by content with anndata: ``X``, ``layers``, ``obs``, ``var``,
  ``obsm``, ``varm``, ``obsp``, ``varp`` exactly, ``uns`` recursively;
- ``.npz``: scipy sparse matrices (or numpy archives) exactly;
- ``.json``: parsed and compared recursively;
- anything else (``.html``, images): must exist in both runs, not compared
  (they embed run times and dates).

In ``.json`` and ``uns``, values that record *when* or *how long* something
ran are skipped: keys named like a time (``created``, ``time``, ``timestamp``,
``date``, ``elapsed*``, ``*seconds``, ``duration``, ``runtime``) and strings
that are ISO-8601 date-times.  Every skipped key is listed in the output, so
nothing is ignored silently.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

TABLE_SUFFIXES = {".tsv", ".csv", ".txt"}
VOLATILE_KEY = re.compile(r"^(created|time|timestamp|date|duration|runtime|elapsed.*|.*seconds|.*_time)$")
ISO_DATETIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _equal_values(a, b, where: str, skipped: list[str]) -> list[str]:
    """Recursive equality of JSON-like / uns values; returns a list of differences."""
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = []
        if set(a) != set(b):
            diffs.append(f"{where}: keys differ: {sorted(set(a) ^ set(b))}")
        for k in sorted(set(a) & set(b)):
            if VOLATILE_KEY.match(str(k)):
                skipped.append(f"{where}/{k}")
                continue
            diffs += _equal_values(a[k], b[k], f"{where}/{k}", skipped)
        return diffs
    if isinstance(a, str) and isinstance(b, str):
        if a != b and ISO_DATETIME.match(a) and ISO_DATETIME.match(b):
            skipped.append(where)
            return []
        return [] if a == b else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} != {len(b)}"]
        diffs = []
        for i, (x, y) in enumerate(zip(a, b)):
            diffs += _equal_values(x, y, f"{where}[{i}]", skipped)
        return diffs
    if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
        return _frame_diff(a, b, where)
    if hasattr(a, "shape") or hasattr(b, "shape"):
        return _array_diff(a, b, where)
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return []
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} != {b!r}"]


def _array_diff(a, b, where: str) -> list[str]:
    import scipy.sparse as sp

    if sp.issparse(a) or sp.issparse(b):
        if not (sp.issparse(a) and sp.issparse(b)):
            return [f"{where}: one sparse, one dense"]
        if a.shape != b.shape or a.dtype != b.dtype:
            return [f"{where}: shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}"]
        a, b = a.tocsr(), b.tocsr()
        a.sort_indices()
        b.sort_indices()
        same = (
            np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data, equal_nan=a.dtype.kind in "fc")
        )
        return [] if same else [f"{where}: sparse values differ (max |diff| {abs(a - b).max():.3g})"]
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return [f"{where}: shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}"]
    equal_nan = a.dtype.kind in "fc"
    if np.array_equal(a, b, equal_nan=equal_nan):
        return []
    if a.dtype.kind in "fc":
        return [f"{where}: values differ (max |diff| {np.nanmax(np.abs(a - b)):.3g})"]
    return [f"{where}: values differ"]


def _frame_diff(a: pd.DataFrame, b: pd.DataFrame, where: str) -> list[str]:
    try:
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    except AssertionError as e:
        return [f"{where}: {str(e).strip().splitlines()[0:4]}"]
    return []


def compare_table(pa: Path, pb: Path) -> tuple[str, list[str]]:
    if pa.read_bytes() == pb.read_bytes():
        return "identical bytes", []
    sep = "," if pa.suffix == ".csv" else "\t"
    da = pd.read_csv(pa, sep=sep)
    db = pd.read_csv(pb, sep=sep)
    diffs = _frame_diff(da, db, str(pa.name))
    return "equal by content", diffs


def compare_h5ad(pa: Path, pb: Path, skipped: list[str]) -> tuple[str, list[str]]:
    import anndata as ad

    a, b = ad.read_h5ad(pa), ad.read_h5ad(pb)
    diffs = []
    if a.shape != b.shape:
        return "", [f"shape {a.shape} != {b.shape}"]
    diffs += _array_diff(a.X, b.X, "X")
    diffs += _frame_diff(a.obs, b.obs, "obs")
    diffs += _frame_diff(a.var, b.var, "var")
    for slot in ("layers", "obsm", "varm", "obsp", "varp"):
        ma, mb = getattr(a, slot), getattr(b, slot)
        if set(ma.keys()) != set(mb.keys()):
            diffs.append(f"{slot}: keys {sorted(ma.keys())} != {sorted(mb.keys())}")
            continue
        for k in ma.keys():
            diffs += _equal_values(ma[k], mb[k], f"{slot}/{k}", skipped)
    diffs += _equal_values(dict(a.uns), dict(b.uns), "uns", skipped)
    return "equal by content", diffs


def compare_npz(pa: Path, pb: Path) -> tuple[str, list[str]]:
    if pa.read_bytes() == pb.read_bytes():
        return "identical bytes", []
    import scipy.sparse as sp

    try:
        ma, mb = sp.load_npz(pa), sp.load_npz(pb)
        return "equal by content", _array_diff(ma, mb, pa.name)
    except (ValueError, KeyError):
        za, zb = np.load(pa, allow_pickle=False), np.load(pb, allow_pickle=False)
        if set(za.files) != set(zb.files):
            return "", [f"arrays {za.files} != {zb.files}"]
        diffs = []
        for k in za.files:
            diffs += _array_diff(za[k], zb[k], k)
        return "equal by content", diffs


def compare_json(pa: Path, pb: Path, skipped: list[str]) -> tuple[str, list[str]]:
    if pa.read_bytes() == pb.read_bytes():
        return "identical bytes", []
    a, b = json.loads(pa.read_text()), json.loads(pb.read_text())
    return "equal by content", _equal_values(a, b, "", skipped)


def compare_trees(root_a: Path, root_b: Path) -> int:
    fa, fb = _files(root_a), _files(root_b)
    failures: list[str] = []
    for name in sorted(fa - fb):
        failures.append(f"{name}: only in {root_a}")
    for name in sorted(fb - fa):
        failures.append(f"{name}: only in {root_b}")
    counts: dict[str, int] = {}
    not_compared = []
    for name in sorted(fa & fb):
        pa, pb = root_a / name, root_b / name
        skipped: list[str] = []
        suffix = pa.suffix.lower()
        try:
            if suffix in TABLE_SUFFIXES or name.endswith((".tsv.gz", ".csv.gz")):
                how, diffs = compare_table(pa, pb)
            elif suffix == ".h5ad":
                how, diffs = compare_h5ad(pa, pb, skipped)
            elif suffix == ".npz":
                how, diffs = compare_npz(pa, pb)
            elif suffix == ".json":
                how, diffs = compare_json(pa, pb, skipped)
            else:
                not_compared.append(name)
                continue
        except Exception as e:  # unreadable file: a failure, with the reason
            how, diffs = "", [f"could not compare: {type(e).__name__}: {e}"]
        if diffs:
            failures += [f"{name}: {d}" for d in diffs]
            print(f"DIFFERENT  {name}")
        else:
            counts[how] = counts.get(how, 0) + 1
            note = f" (skipped run-time keys: {', '.join(sorted(set(skipped)))})" if skipped else ""
            print(f"same       {name}: {how}{note}")
    for name in not_compared:
        print(f"exists     {name}: present in both runs, not compared")
    summary = ", ".join(f"{n} {how}" for how, n in sorted(counts.items()))
    print(f"compared {len(fa & fb)} files: {summary}; {len(not_compared)} not compared")
    if failures:
        print(f"{len(failures)} difference(s):", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    if not (fa & fb):
        print("no output files to compare", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = Path(argv[0]), Path(argv[1])
    for p in (a, b):
        if not p.is_dir():
            print(f"compare_outputs: {p} is not a directory", file=sys.stderr)
            return 2
    return compare_trees(a, b)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
