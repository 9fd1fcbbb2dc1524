"""benchmarks/real_panel.py: its committed tables are what its summary makes of its committed rows, and it refuses a
panel file whose sha256 differs from resources/README.md's."""

import sys
from pathlib import Path

import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import real_panel  # noqa: E402


@pytest.mark.parametrize("stem", ["real_panel", "real_panel_seed1"])
def test_committed_summary_is_rebuilt_from_the_committed_rows(stem, tmp_path):
    md = BENCH / "results" / f"{stem}.md"
    tsv = BENCH / "results" / f"{stem}.tsv"
    if not md.exists():
        pytest.skip(f"{md} not present")
    pytest.importorskip(
        "tabulate"
    )  # pandas' to_markdown; snakemake brings it with the [test] extra; .ci/minimums has none of the extras
    old = md.read_text()
    run = next(line for line in old.splitlines() if line.startswith("Run "))
    out = tmp_path / "x.md"
    real_panel.write_summary(pd.read_csv(tsv, sep="\t"), run, out)
    assert out.read_text().strip() == old.strip()


def test_a_panel_file_with_another_sha256_is_refused(monkeypatch):
    file, _ = real_panel.FILES["stoeckius"]
    monkeypatch.setitem(real_panel.FILES, "stoeckius", (file, "0" * 64))
    with pytest.raises(ValueError, match="sha256 .* expected 0{64}"):
        real_panel.load_set("stoeckius")
