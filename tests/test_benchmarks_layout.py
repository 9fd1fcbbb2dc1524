"""benchmarks/: every committed result file is named after the script that writes it.

``benchmarks/results/<script>.<ext>`` or ``benchmarks/results/<script>_<variant>.<ext>``
(benchmarks/README.md, "Layout"), so that a reader finds the script behind a number from its
file name.  Nothing here runs a benchmark.
"""

from __future__ import annotations

from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def script_of(name: str, scripts: set[str]) -> str | None:
    """The script whose name ``name`` (a result file's stem) starts with, the longest that fits, or None."""
    fits = [s for s in scripts if name == s or name.startswith(s + "_")]
    return max(fits, key=len) if fits else None


def test_script_of_accepts_the_script_and_its_variants_only():
    scripts = {"scaling", "real_panel", "run_benchmarks"}
    assert script_of("scaling", scripts) == "scaling"
    assert script_of("real_panel_seed1", scripts) == "real_panel"
    assert script_of("run_benchmarks_agreement", scripts) == "run_benchmarks"
    assert script_of("agreement", scripts) is None
    assert script_of("summary", scripts) is None
    assert script_of("scalingx", scripts) is None  # a prefix of a word is not the script


def test_every_result_file_is_named_after_a_script():
    scripts = {p.stem for p in BENCH.glob("*.py")}
    files = sorted(p for p in (BENCH / "results").iterdir() if p.is_file())
    assert files, "benchmarks/results/ holds no files"
    orphans = [p.name for p in files if script_of(p.name.split(".")[0], scripts) is None]
    assert orphans == [], f"result files not named after a benchmarks/*.py script: {orphans}"
