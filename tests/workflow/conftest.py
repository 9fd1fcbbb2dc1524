"""Helpers for the data-layer workflow tests: a minimal Snakefile with only the
fetch and prepare stages (so these tests do not depend on the later stages) and
the helpers they use (common.smk, and analysis.smk: functions only, among them the
jobs' priorities), in the Snakefile's order, run in a temporary working directory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _mini_snakefile(tmp_path: Path) -> Path:
    rules = REPO / "workflow" / "rules"
    text = "\n".join(f'include: "{rules / f}.smk"' for f in ("common", "analysis", "fetch", "prepare")) + "\n"
    p = tmp_path / "Snakefile.data"
    p.write_text(text)
    return p


@pytest.fixture(scope="session")
def mini_workflow():
    """Factory: mini_workflow(tmp_path) -> path of a Snakefile with the fetch and prepare rules only."""
    return _mini_snakefile


def run_snakemake(snakefile: Path, workdir: Path, config: dict, targets, *extra, timeout=300):
    """Run snakemake on `config` (written as JSON) in `workdir`; return CompletedProcess."""
    cfg = workdir / "config.test.json"
    cfg.write_text(json.dumps(config))
    cmd = [
        SNAKEMAKE,
        "-s",
        str(snakefile),
        "-d",
        str(workdir),
        "--cores",
        "2",
        *extra,
        *targets,
        "--configfile",
        str(cfg),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def snakemake_run():
    return run_snakemake


def _pbmc_workdir(work: Path) -> Path:
    """``work`` laid out for a run on scanpy's pbmc68k_reduced (700 cells x 765 genes, louvain clusters and the
    cell-cycle phase in obs): ``data/pbmc.h5ad`` and ``resources/`` (the static tables the report reads)."""
    import warnings

    sc = pytest.importorskip("scanpy")
    (work / "data").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata = sc.datasets.pbmc68k_reduced()
    adata.write_h5ad(work / "data" / "pbmc.h5ad")
    (work / "resources").symlink_to(REPO / "resources")
    return work


@pytest.fixture(scope="session")
def pbmc_workdir():
    """Factory: pbmc_workdir(work) -> ``work`` with scanpy's pbmc68k_reduced in data/pbmc.h5ad (and resources/)."""
    return _pbmc_workdir
