"""Script errors always say something (issue 19 item 2): an exception without a message (a
MemoryError) is logged and printed with its type and the dataset, never as an empty line."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_prepare_script_error_with_an_empty_message_says_what_happened(tmp_path, monkeypatch, capsys, restore_logging):
    import glfs_workflow.datasets as datasets

    def oom(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(datasets, "prepare_dataset", oom)
    prov = tmp_path / "provenance.json"
    prov.write_text(json.dumps({"dataset": "d", "files": {}}))
    import glfs_workflow.fetch as fetch

    monkeypatch.setattr(fetch, "check_provenance", lambda p, path: {})
    smk = NS(
        wildcards=NS(dataset="d"), params=NS(dataset={}), input=NS(provenance=str(prov)),
        output=NS(h5ad=str(tmp_path / "prepared.h5ad")), log=[str(tmp_path / "p.log")],
    )
    with pytest.raises(SystemExit):
        runpy.run_path(str(REPO / "scripts/prepare_dataset.py"), init_globals={"snakemake": smk})
    text = (tmp_path / "p.log").read_text()
    assert "MemoryError (no further message) while preparing dataset 'd'" in text
    assert "prepare_dataset d: MemoryError (no further message)" in capsys.readouterr().err
    assert not (tmp_path / "prepared.h5ad").exists()
