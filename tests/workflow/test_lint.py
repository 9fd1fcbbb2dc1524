"""Static checks of the workflow: snakemake --lint, snakefmt --check, dry run of the default config."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name):
    p = BIN / name
    return str(p) if p.exists() else shutil.which(name)


def _run(args):
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.workflow
def test_snakemake_lint_clean():
    r = _run([_tool("snakemake"), "--lint", "--cores", "1"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Lints for" not in out, out


@pytest.mark.workflow
def test_snakefmt_check():
    files = ["Snakefile", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow" / "rules").glob("*.smk"))]
    r = _run([_tool("snakefmt"), "--check", *files])
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.workflow
def test_default_workflow_dry_run():
    r = _run([_tool("snakemake"), "-n", "--forceall", "--cores", "2", "--quiet", "rules"])
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    for rule in ["prepare_dataset", "build_graph", "select_features", "make_report"]:
        assert rule in out, f"rule {rule} missing from the default DAG:\n{out}"
