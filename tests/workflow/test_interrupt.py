"""Interruption (issue 5 item 4): SIGTERM to a running workflow, rerun, same answer.

The tiny configuration (``tests/workflow/tiny/config.yaml``, with the labelled
dataset given as an .h5ad that carries a train/test split and two classes,
grp0 / rest, so the binary classification stage runs too) is run three times from one snapshot of the
workflow, each in its own working directory:

- ``ref``: uninterrupted (in a thread, at the same time as the two below);
- ``cut``: started with ``subprocess.Popen`` in a new session; as soon as the
  first selection table appears, SIGTERM goes to the whole process group
  (snakemake and its running jobs); SIGKILL if it has not exited after 120 s;
- ``cut`` again: a plain rerun (the workflow profile ``profiles/default``
  has ``rerun-incomplete``), which must finish.

Checked: the kill happened mid-way (no report yet), the rerun reuses the jobs
that had finished (their outputs keep their mtime), every selection,
clustering and classification table is byte-identical to the uninterrupted
run, the graph and the .h5ad ``.var`` have the same content, and no temporary
or partial file, nor a snakemake ``incomplete`` marker, is left.

``test_sigterm_during_atomic_write_leaves_no_temporary`` is the deterministic
version of the race the workflow test can only hit by chance: a job killed by
SIGTERM in the middle of ``glfs_workflow.files.atomic_path`` (which every analysis
script uses to write its outputs).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tinysplit import snapshot_workflow, tiny_split_config

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TEMP_MARKERS = (".tmp", ".part", "~")


# ---------------------------------------------------------------- setup helpers


def _workdir(tmp_path_factory, name: str, snap: Path) -> Path:
    wd = tmp_path_factory.mktemp(name)
    (wd / "resources").symlink_to(snap / "resources")  # static tables the report reads
    return wd


def _visible(paths):
    return sorted(p for p in paths if not p.name.startswith("."))


def _result_files(wd: Path) -> list[str]:
    return sorted(str(p.relative_to(wd)) for p in (wd / "results").rglob("*") if p.is_file())


def _tables(wd: Path) -> list[str]:
    """Selection, clustering and classification tables (relative paths)."""
    pats = [
        "results/*/selection/*.tsv",
        "results/*/clustering_nmi.tsv",
        "results/*/classification.tsv",
        "results/*/glfs_path.tsv",
    ]
    return sorted(str(p.relative_to(wd)) for pat in pats for p in _visible(wd.glob(pat)))


def _interrupt(snakefile: Path, wd: Path, config: dict, *, deadline_s=900, grace_s=120) -> dict:
    """Start the workflow in its own session, SIGTERM its process group once the first
    selection table exists, wait (SIGKILL after ``grace_s``); return what was seen."""
    cfg = wd / "config.test.json"  # as conftest.run_snakemake writes it
    cfg.write_text(json.dumps(config))
    cmd = [SNAKEMAKE, "-s", str(snakefile), "-d", str(wd), "--cores", "2", "--configfile", str(cfg)]
    out = open(wd / "interrupted.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    t0 = time.monotonic()
    try:
        while not _visible((wd / "results").glob("*/selection/*.tsv")):
            if proc.poll() is not None:
                pytest.fail(
                    f"the workflow ended (exit {proc.returncode}) before any selection table:\n"
                    + (wd / "interrupted.log").read_text()[-4000:]
                )
            if time.monotonic() - t0 > deadline_s:
                pytest.fail(f"no selection table after {deadline_s} s")
            time.sleep(0.1)
        seen = {"files_at_kill": _result_files(wd)}
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
            seen["sigkill"] = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            seen["sigkill"] = True
    finally:
        if proc.poll() is None:  # a failed assertion above: do not leave the run behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        out.close()
    seen["returncode"] = proc.returncode
    seen["files_after_kill"] = _result_files(wd)
    # outputs of jobs that had finished (snakemake deletes those of the jobs it killed)
    seen["mtimes"] = {
        str(p.relative_to(wd)): p.stat().st_mtime_ns
        for p in _visible((wd / "results").glob("*/*"))
        if p.suffix in (".h5ad", ".npz") and p.is_file()
    }
    seen["log"] = (wd / "interrupted.log").read_text()
    return seen


# ---------------------------------------------------------------- the runs
@pytest.fixture(scope="module")
def runs(tmp_path_factory, snakemake_run):
    snap = snapshot_workflow(tmp_path_factory.mktemp("snapshot"))
    config = tiny_split_config(snap)
    snakefile = snap / "Snakefile"
    ref = _workdir(tmp_path_factory, "ref", snap)
    cut = _workdir(tmp_path_factory, "cut", snap)
    with ThreadPoolExecutor(max_workers=1) as pool:
        ref_future = pool.submit(snakemake_run, snakefile, ref, config, [], timeout=1800)
        seen = _interrupt(snakefile, cut, config)
        rerun = snakemake_run(snakefile, cut, config, [], timeout=1800)
        ref_proc = ref_future.result()
    assert ref_proc.returncode == 0, ref_proc.stderr[-6000:]
    return {"ref": ref, "cut": cut, "seen": seen, "rerun": rerun}


@pytest.mark.workflow
def test_kill_happened_midway(runs):
    seen = runs["seen"]
    assert seen["returncode"] != 0, "snakemake should report the interruption with a non-zero exit"
    assert "results/report.html" not in seen["files_at_kill"], "the run had already finished when it was killed"
    missing = set(_result_files(runs["ref"])) - set(seen["files_after_kill"])
    assert missing, "nothing was left to do after the kill"
    assert seen["mtimes"], "no prepared.h5ad / graph.npz had finished before the kill"


@pytest.mark.workflow
def test_rerun_completes_and_resumes(runs):
    rerun, cut = runs["rerun"], runs["cut"]
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-6000:]
    assert (cut / "results/report.html").is_file()
    # resumed, not restarted: outputs finished before the kill are reused as they are
    for rel, mtime in runs["seen"]["mtimes"].items():
        assert (cut / rel).stat().st_mtime_ns == mtime, f"{rel} was recomputed by the rerun"
    assert _result_files(cut) == _result_files(runs["ref"])


@pytest.mark.workflow
def test_tables_equal_uninterrupted_run(runs):
    ref, cut = runs["ref"], runs["cut"]
    tables = _tables(ref)
    kinds = {t.split("/")[2] if "/selection/" in t else Path(t).name for t in tables}
    assert {"selection", "clustering_nmi.tsv", "classification.tsv"} <= kinds, tables
    assert _tables(cut) == tables
    differ = [t for t in tables if (ref / t).read_bytes() != (cut / t).read_bytes()]
    assert not differ, f"tables differ from the uninterrupted run: {differ}"


@pytest.mark.workflow
def test_graph_and_adata_equal_uninterrupted_run(runs):
    import anndata
    import scipy.sparse as sp

    ref, cut = runs["ref"], runs["cut"]
    for ds in ["tiny_split", "tiny_unlabelled"]:
        Wr = sp.load_npz(ref / f"results/{ds}/graph.npz").tocsr()
        Wc = sp.load_npz(cut / f"results/{ds}/graph.npz").tocsr()
        assert Wr.shape == Wc.shape and Wr.nnz > 0
        assert abs(Wr - Wc).max() == 0, ds
        ar = anndata.read_h5ad(ref / f"results/{ds}/adata.h5ad")
        ac = anndata.read_h5ad(cut / f"results/{ds}/adata.h5ad")
        assert len(ar.var.columns) > 0
        pd.testing.assert_frame_equal(ar.var, ac.var)
        pd.testing.assert_frame_equal(ar.obs, ac.obs)
        np.testing.assert_array_equal(np.asarray(ar.X), np.asarray(ac.X))


@pytest.mark.workflow
def test_no_partial_files_left(runs):
    for name in ("ref", "cut"):
        wd = runs[name]
        stray = [
            str(p.relative_to(wd))
            for p in (wd / "results").rglob("*")
            if p.is_file() and (p.name.startswith(".") or any(m in p.name for m in TEMP_MARKERS))
        ]
        assert not stray, f"{name}: temporary or partial files left in results/: {stray}"
        incomplete = wd / ".snakemake" / "incomplete"
        markers = [p.name for p in incomplete.rglob("*") if p.is_file()] if incomplete.exists() else []
        assert not markers, f"{name}: snakemake still marks outputs incomplete: {markers}"


_KILLED_WRITER = """
import os, signal, sys, time
import pandas as pd
from glfs_workflow.files import atomic_path, write_tsv
from glfs_workflow.logs import log_to
dest = sys.argv[1]
log = log_to(sys.argv[2])            # every analysis script starts like this
if sys.argv[3] == "kill":
    with atomic_path(dest) as tmp:
        pd.DataFrame({"gene": ["a"], "score": [1.0]}).to_csv(tmp, sep="\\t", index=False)
        os.kill(os.getpid(), signal.SIGTERM)   # what snakemake does to a running job
        time.sleep(30)
else:
    write_tsv(pd.DataFrame({"gene": ["a"], "score": [1.0]}), dest)
"""


def test_sigterm_during_atomic_write_leaves_no_temporary(tmp_path):
    """A job killed by SIGTERM while writing, then rerun: only the final file remains.

    Either fix is accepted: the script turns SIGTERM into an exception so the
    writer's cleanup runs, or the next writer of the same output removes stale
    temporaries (as ``glfs_workflow.files._atomic_path`` does)."""
    script = tmp_path / "writer.py"
    script.write_text(_KILLED_WRITER)
    dest = tmp_path / "out" / "table.tsv"
    killed = subprocess.run(
        [sys.executable, str(script), str(dest), str(tmp_path / "w.log"), "kill"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode != 0, "the writer was supposed to be killed"
    assert not dest.exists(), "a killed writer must not leave its output"
    rerun = subprocess.run(
        [sys.executable, str(script), str(dest), str(tmp_path / "w.log"), "write"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(p.name for p in dest.parent.iterdir()) == ["table.tsv"]
