"""Swapping in a user's matrix (issue 3 item 10): entries as in the README's
"Your own data", one with labels and one without, run end to end through the
whole workflow (the real Snakefile) in a temporary working directory.

The labelled matrix has planted group genes, so the Laplacian score's top
genes are known in advance.

A user's first days: the documented recovery after a SIGKILL (`--unlock`, then the
same command) works and gives the same results; a target after `--configfile` fails
with snakemake's FileNotFoundError, and the forms the docs recommend work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
PLANTED = [f"gene{j}" for j in range(4)]


def _write_inputs(d: Path):
    rng = np.random.default_rng(7)
    n, p = 24, 40
    groups = np.repeat([0, 1], n // 2)
    X = rng.normal(0.0, 1.0, (n, p))
    X[:, :4] += 4.0 * groups[:, None]  # genes 0-3 separate the two groups
    samples = [f"pt{i:02d}" for i in range(n)]
    genes = [f"gene{j}" for j in range(p)]
    pd.DataFrame(X.T, index=pd.Index(genes, name="id"), columns=samples).to_csv(d / "mine.tsv", sep="\t")
    pd.DataFrame({"sample": samples, "subtype": np.where(groups == 1, "B", "A")}).to_csv(
        d / "mine_labels.tsv", sep="\t", index=False
    )
    Y = rng.normal(0.0, 1.0, (16, 30))
    pd.DataFrame(Y, index=[f"u{i}" for i in range(16)], columns=[f"g{j}" for j in range(30)]).to_csv(d / "other.csv")


@pytest.fixture(scope="module")
def user_run(tmp_path_factory, snakemake_run):
    work = tmp_path_factory.mktemp("user")
    (work / "data").mkdir()
    _write_inputs(work / "data")
    (work / "resources").symlink_to(REPO / "resources")  # static tables the report reads
    config = {
        "run": ["mydata", "nolabels"],
        "methods": ["laplacian_score", "variance", "fisher_score"],
        "graph": {"n_neighbors": 5},
        "selection": {"n_features": 4},
        "clustering": {"n_runs": 2, "feature_grid": [4, "all"]},
        "classification": {"datasets": []},
        "simulation": {"enabled": False},
        "datasets": {
            "mydata": {
                "expression": "data/mine.tsv",
                "orientation": "genes_by_samples",
                "sha256": None,
                "labels": "data/mine_labels.tsv",
                "sample_column": "sample",
                "label_column": "subtype",
                "n_clusters": None,
            },
            "nolabels": {"expression": "data/other.csv", "orientation": "samples_by_genes"},
        },
    }
    proc = snakemake_run(REPO / "Snakefile", work, config, [], timeout=900)
    return work, proc


def _read(path):
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.read_h5ad(path)


@pytest.mark.workflow
def test_user_datasets_run_end_to_end(user_run):
    work, proc = user_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / "results/report.html").exists()
    for ds in ("mydata", "nolabels"):
        assert (work / f"results/{ds}/adata.h5ad").exists()
        assert (work / f"results/{ds}/provenance.json").exists()


@pytest.mark.workflow
def test_labelled_user_dataset(user_run):
    work, _ = user_run
    a = _read(work / "results/mydata/adata.h5ad")
    assert a.shape == (24, 40)
    assert list(a.obs_names[:2]) == ["pt00", "pt01"]
    assert a.obs["label"].value_counts().to_dict() == {"A": 12, "B": 12}
    rank = a.var["laplacian_score_rank"]
    top4 = set(rank.sort_values().index[:4])
    assert top4 == set(PLANTED)
    assert (work / "results/mydata/selection/fisher_score.tsv").exists()
    assert (work / "results/mydata/clustering_nmi.tsv").exists()


@pytest.mark.workflow
def test_unlabelled_user_dataset(user_run):
    work, _ = user_run
    a = _read(work / "results/nolabels/adata.h5ad")
    assert a.shape == (16, 30)
    assert "label" not in a.obs.columns
    assert "laplacian_score_rank" in a.var.columns
    # supervised methods and label-based evaluations are skipped, not failed
    assert not (work / "results/nolabels/selection/fisher_score.tsv").exists()
    assert (work / "results/nolabels/selection/variance.tsv").exists()


# ---------------------------------------------------------------- issue 11: first days

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _small_inputs(wd: Path, k=3):
    (wd / "data").mkdir()
    rng = np.random.default_rng(0)
    for i in range(k):
        X = rng.normal(size=(30, 12))
        pd.DataFrame(X, index=[f"g{j}" for j in range(30)], columns=[f"s{c}" for c in range(12)]).to_csv(
            wd / f"data/m{i}.tsv", sep="\t"
        )
    return {
        "run": [f"d{i}" for i in range(k)],
        "graph": {"n_neighbors": 3},
        "datasets": {f"d{i}": {"expression": f"data/m{i}.tsv"} for i in range(k)},
    }


def _cmd(snakefile, wd, cfg, *extra):
    targets = [f"results/{d}/prepared.h5ad" for d in cfg["run"]]
    return [
        SNAKEMAKE,
        "-s",
        str(snakefile),
        "-d",
        str(wd),
        "--cores",
        "1",
        *targets,
        "--configfile",
        str(wd / "c.json"),
        *extra,
    ]


@pytest.mark.workflow
def test_recovery_after_sigkill_is_unlock_then_the_same_command(tmp_path, mini_workflow):
    ref, wd = tmp_path / "ref", tmp_path / "killed"
    for d in (ref, wd):
        d.mkdir()
        cfg = _small_inputs(d)
        (d / "c.json").write_text(json.dumps(cfg))
    snakefile = mini_workflow(tmp_path)
    proc = subprocess.run(_cmd(snakefile, ref, cfg), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]

    cmd = _cmd(snakefile, wd, cfg)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    locks, t0 = wd / ".snakemake/locks", time.monotonic()
    while not (locks.exists() and any(locks.iterdir())) and time.monotonic() - t0 < 300 and p.poll() is None:
        time.sleep(0.02)
    assert p.poll() is None, "snakemake finished before it could be killed"
    os.killpg(p.pid, signal.SIGKILL)  # snakemake and its jobs: no chance to release the lock
    p.wait(timeout=60)

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode != 0 and "Directory cannot be locked" in again.stdout + again.stderr  # what the README says
    unlock = subprocess.run([*cmd, "--unlock"], capture_output=True, text=True, timeout=600)
    assert unlock.returncode == 0 and "Unlocked" in unlock.stdout + unlock.stderr
    final = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-2000:]
    for d in cfg["run"]:
        a, b = _read(ref / f"results/{d}/prepared.h5ad"), _read(wd / f"results/{d}/prepared.h5ad")
        np.testing.assert_array_equal(a.X, b.X)
        assert list(a.obs_names) == list(b.obs_names) and list(a.var_names) == list(b.var_names)
    leftovers = [q.name for q in wd.rglob("*.part*")]
    assert leftovers == []


@pytest.mark.workflow
def test_target_after_configfile(tmp_path, mini_workflow):
    cfg = _small_inputs(tmp_path, k=1)
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    snakefile, target = mini_workflow(tmp_path), "results/d0/prepared.h5ad"
    base = [SNAKEMAKE, "-n", "-s", str(snakefile), "-d", str(tmp_path), "--cores", "1"]
    after = subprocess.run(
        [*base, "--configfile", str(tmp_path / "c.json"), target], capture_output=True, text=True, timeout=300
    )
    out = after.stdout + after.stderr
    assert after.returncode != 0
    assert "FileNotFoundError" in out and target in out  # snakemake's own message, quoted in the README
    for form in ([target, "--configfile", str(tmp_path / "c.json")], [f"--configfile={tmp_path / 'c.json'}", target]):
        ok = subprocess.run([*base, *form], capture_output=True, text=True, timeout=300)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "prepare_dataset" in ok.stdout + ok.stderr
