"""The benchmark harness's reporting half (benchmarks/bench): run_benchmarks.md and the result tables.

The committed ``benchmarks/results/run_benchmarks.md`` (``summary.md`` before the files were named
after their script; a rename, the content unchanged) was written by the harness
before it was split into measurement and reporting (``run_benchmarks.py
--summary-only`` of that version reproduces it byte for byte from the
committed tables), so regenerating it from the same tables checks that the
split changed nothing.  Nothing here runs a benchmark.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
RESULTS = BENCH_DIR / "results"
RESULT_FILES = (
    "run_benchmarks.tsv",
    "run_benchmarks_agreement.tsv",
    "run_benchmarks_run_info.json",
    "run_benchmarks.md",
)

sys.path.insert(0, str(BENCH_DIR))
from bench import measure, report, results  # noqa: E402

needs_results = pytest.mark.skipif(
    not all((RESULTS / f).exists() for f in RESULT_FILES),
    reason="benchmarks/results/run_benchmarks{.tsv,_agreement.tsv,_run_info.json,.md} not present "
    "(run `python benchmarks/run_benchmarks.py` to create them)",
)


@needs_results
def test_summary_from_committed_results_is_the_committed_summary():
    res = results.load_results(RESULTS, quick=False)
    assert report.summary_md(res) == (RESULTS / "run_benchmarks.md").read_text()


@needs_results
def test_summary_only_command_rewrites_the_same_file(tmp_path):
    for f in RESULT_FILES[:3]:
        (tmp_path / f).write_bytes((RESULTS / f).read_bytes())
    cmd = [sys.executable, str(BENCH_DIR / "run_benchmarks.py"), "--summary-only", "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    assert (tmp_path / "run_benchmarks.md").read_bytes() == (RESULTS / "run_benchmarks.md").read_bytes()


@needs_results
@pytest.mark.parametrize(
    ("name", "read", "write"),
    [
        ("run_benchmarks.tsv", results.read_tsv, results.write_benchmarks_tsv),
        ("run_benchmarks_agreement.tsv", results.read_tsv, results.write_agreement_tsv),
    ],
)
def test_tables_read_back_and_written_again_are_unchanged(tmp_path, name, read, write):
    write(read(RESULTS / name), tmp_path / name)
    assert (tmp_path / name).read_bytes() == (RESULTS / name).read_bytes()


def _row(group, case, impl, status="ok", **kw):
    """A run_benchmarks.tsv row as read back (figures that a test does not set are 1.0)."""
    figures = dict.fromkeys(("time_s", "peak_rss_mb", "peak_delta_mb", "cpu_first_s", "load1"), 1.0)
    return {"group": group, "case": case, "impl": impl, "status": status, "run_at": "t", "extra": {}, **figures, **kw}


def test_partial_run_keeps_the_other_groups_rows(tmp_path):
    saved = [_row("datasets", "a", "glfs graph", time_s=1.0), _row("lapaofs", "n=50", "glfs.lapaofs", time_s=2.0)]
    results.write_benchmarks_tsv(saved, results.result_path(tmp_path, "rows", quick=False))
    res = results.RunResults(rows=[_row("lapaofs", "n=50", "glfs.lapaofs", time_s=3.0)], only=["lapaofs"])
    results.merge_saved(res, tmp_path)
    assert [(r["group"], r["time_s"]) for r in res.rows] == [("datasets", 1.0), ("lapaofs", 3.0)]


def test_loglog_fit_recovers_a_power_law():
    n = [1000, 2000, 4000, 8000]
    slope, intercept = report.fit_loglog(n, [3e-6 * x**2.5 for x in n])
    assert slope == pytest.approx(2.5)
    assert math.exp(intercept) == pytest.approx(3e-6)


def test_lapaofs_table_ratio_and_order_agreement():
    rows = [
        _row("lapaofs", "n=50", "glfs.lapaofs", time_s=0.01, extra={"order": [3, 1, 2]}),
        _row("lapaofs", "n=50", "naive re-inversion", time_s=0.5, extra={"order": [3, 2, 1]}),
    ]
    lines = report.lapaofs_section(results.RunResults(rows=rows))
    assert "| n=50 | 0.01 s | 0.5 s | 50x | no (1/3 positions) |" in lines


def test_ls_goals_extrapolate_the_peer_when_it_did_not_run_at_full_size():
    # glfs at 20,000 in 5 s; skfeature measured at 5,000 and 10,000 with time ~ n^2: 25 s and 100 s,
    # so 400 s at 20,000, i.e. 80 x slower (EXTRAPOLATED)
    rows = [
        _row("ls_scaling", "n=20000 d=2000", "glfs graph+ls", n_samples=20000.0, time_s=5.0, peak_rss_mb=1500.0),
        _row("ls_scaling", "n=5000 d=2000", "skfeature graph+ls", n_samples=5000.0, time_s=25.0, peak_rss_mb=1.0),
        _row("ls_scaling", "n=10000 d=2000", "skfeature graph+ls", n_samples=10000.0, time_s=100.0, peak_rss_mb=1.0),
    ]
    res = results.RunResults(rows=rows, max_mem_gb=8.0, idle={"rss_mb": 160.0})
    text = "\n".join(report.ls_scaling_section(res))
    assert "under 10 s: 5.00 s wall with 1 thread" in text
    assert "-> met" in text
    assert "about 80x (EXTRAPOLATED peer time 400 s" in text
    assert "under 2 GB: peak RSS 1500 MB" in text


@pytest.mark.parametrize(
    ("pred_mb", "n_dense", "expected"),
    [
        (8 * 1024.0, None, None),  # at the limit: runs
        (9 * 1024.0, None, ("skipped_memory", "predicted 9.0 GB > 8 GB")),
        (9 * 1024.0, 4, ("skipped_memory", "predicted 9.0 GB (~4 dense n x n) > 8 GB")),
    ],
)
def test_memory_guard(pred_mb, n_dense, expected):
    assert measure.memory_skip(pred_mb, 8.0, n_dense) == expected


def test_predicted_memory_counts_dense_and_input_arrays():
    # 1000 x 1000 float64 = 8e6 bytes; 2 dense + 3 copies of 1000 x 100 = 16e6 + 2.4e6 bytes
    assert measure.predicted_mb(1000, 100, 2, 3, 100.0) == pytest.approx(100.0 + 18.4e6 / 2**20)


def test_scaling_series_skips_sizes_predicted_too_slow():
    series = measure.Series(power=3, limit_s=100.0, suffix=" (~n^3)")
    assert series.skip(500) is None  # nothing measured yet
    series.record(500, {"status": "ok", "time_s": 10.0})
    assert series.skip(1000) is None  # 10 s * 2^3 = 80 s: under the limit
    assert series.skip(2000) == ("skipped_time", "predicted 640 s > 100 s from n=500 (~n^3)")
    series.record(1000, {"status": "timeout"})
    assert series.skip(2000) == ("skipped_time", "timed out at n=1000")
