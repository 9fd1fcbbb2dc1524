"""Every rule that runs as a cluster job takes threads, memory and runtime from config.yaml.

Issue 4: per-rule ``threads`` and ``resources: mem_mb, runtime`` come from the
``resources:`` families of config.yaml (scaled with the dataset size by
common.smk), so a user raises them without editing rules; rules without them
must be local rules (they run in the snakemake process, never as sbatch jobs).
These checks read the rule files as text: fast, and independent of a run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((ROOT / "workflow" / "rules").glob("*.smk"))
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def rules():
    """(file, rule name, body text) for every rule in workflow/rules/*.smk."""
    out = []
    for smk in RULE_FILES:
        text = smk.read_text()
        for m in re.finditer(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", text, flags=re.M):
            out.append((smk.name, m.group(1), m.group(2)))
    return out


RULES = rules()
JOB_RULES = [r for r in RULES if re.search(r"^\s+(script|shell|run|notebook|wrapper):", r[2], re.M)]
CLUSTER_RULES = [r for r in JOB_RULES if not re.search(r"^\s+localrule:\s*True", r[2], re.M)]


def test_rules_were_found():
    assert len(CLUSTER_RULES) >= 5, [r[1] for r in RULES]


@pytest.mark.parametrize("smk,name,body", CLUSTER_RULES, ids=[r[1] for r in CLUSTER_RULES])
def test_cluster_rules_take_resources_from_one_config_family(smk, name, body):
    # local rules (localrule: True) run in the snakemake process and are exempt
    threads = re.findall(r'threads:\s*get_threads\("(\w+)"\)', body)
    mem = re.findall(r'mem_mb=get_mem_mb\("(\w+)"\)', body)
    runtime = re.findall(r'runtime=get_runtime\("(\w+)"(?:, per_method=True)?\)', body)
    assert threads and mem and runtime, (
        f"{smk} rule {name} runs as a cluster job but does not set threads/mem_mb/runtime "
        "from config (get_threads/get_mem_mb/get_runtime), nor is it a local rule"
    )
    assert threads == mem == runtime, f"{smk} rule {name}: families differ {threads} {mem} {runtime}"
    assert threads[0] in CONFIG["resources"], f"{smk} rule {name}: family {threads[0]!r} not in config.yaml resources"


def test_config_families_are_the_schema_families():
    allowed = set(SCHEMA["properties"]["resources"]["propertyNames"]["enum"])
    used = set()
    for _, _, body in RULES:
        used |= set(re.findall(r'get_(?:threads|mem_mb|runtime)\("(\w+)"\)', body))
    assert set(CONFIG["resources"]) <= allowed
    assert used <= set(CONFIG["resources"]), (
        f"families used by rules but not configured: {used - set(CONFIG['resources'])}"
    )
    assert "default" in CONFIG["resources"]
    for family, spec in CONFIG["resources"].items():
        assert set(spec) <= {
            "threads",
            "mem_mb",
            "runtime",
            "mem_mb_per_mcell",
            "runtime_per_mcell",
            "runtime_per_mnnz",
        }, family
