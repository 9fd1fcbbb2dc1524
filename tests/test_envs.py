"""The conda environments in envs/ agree with pyproject.toml and the tested installation.

Conda channels cannot be reached from the test machine, so the environments
are never solved here.  What is checked instead: every file is valid YAML of
the conda environment form, uses conda-forge/bioconda only, pins every package
to one version, contains every runtime dependency of the glfs package (it is
installed with --no-deps by the post-deploy script), pins versions that
satisfy pyproject.toml's specifiers and equal the versions installed in the
environment the tests run in (the versions the workflow is tested with), and
every ``conda:`` directive of the workflow names one of these files.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")
yaml = pytest.importorskip("yaml")  # the workflow extra
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
ENV_FILES = sorted(ENVS.glob("*.yaml"))
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)=([0-9][0-9A-Za-z.\-+]*)$")
# Build tooling: pinned, but not a runtime dependency whose version the tests
# installation decides (pyproject's build-system requires setuptools>=68).
TOOLING = {"python", "pip", "setuptools"}
# conda-forge names that differ from the PyPI distribution (whose installed version is checked).
CONDA_TO_PYPI = {"python-igraph": "igraph"}
PYPI_TO_CONDA = {v: k for k, v in CONDA_TO_PYPI.items()}


def _requirements(reqs):
    return {Requirement(r).name.lower(): Requirement(r) for r in reqs}


CORE = _requirements(PYPROJECT["project"]["dependencies"])
WORKFLOW = _requirements(
    r for r in PYPROJECT["project"]["optional-dependencies"]["workflow"] if not r.startswith("glfs")
)
SINGLECELL = _requirements(PYPROJECT["project"]["optional-dependencies"]["singlecell"])
# Which optional dependencies each environment must carry (conda names): the compute rules
# (glfs.yaml) run scanpy's selections and the Leiden evaluation, so they need the singlecell extra.
EXTRAS_BY_ENV = {
    "data": {"rdata", "xarray"},
    "report": {"matplotlib", "jinja2", "markupsafe"},
    "glfs": {PYPI_TO_CONDA.get(name, name) for name in SINGLECELL},
}


def parse_env(path: Path) -> dict[str, str]:
    """{package: pinned version} of a conda environment file; fails on unpinned entries."""
    env = yaml.safe_load(path.read_text())
    assert isinstance(env, dict), f"{path.name}: not a YAML mapping"
    pins: dict[str, str] = {}
    for dep in env["dependencies"]:
        assert isinstance(dep, str), f"{path.name}: nested entry {dep!r} (no pip: section allowed; use conda packages)"
        m = PIN.match(dep.strip())
        assert m, f"{path.name}: {dep!r} is not pinned as name=version"
        name = m.group(1).lower()
        assert name not in pins, f"{path.name}: {name} listed twice"
        pins[name] = m.group(2)
    return pins


def test_there_are_environments_for_each_rule_family():
    assert {p.stem for p in ENV_FILES} >= set(EXTRAS_BY_ENV)


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_file_form_and_channels(path):
    env = yaml.safe_load(path.read_text())
    assert set(env) == {"name", "channels", "dependencies"}, f"{path.name}: keys {sorted(env)}"
    assert env["channels"][0] == "conda-forge"
    assert set(env["channels"]) <= {"conda-forge", "bioconda", "nodefaults"}, env["channels"]
    assert "defaults" not in env["channels"]
    parse_env(path)


def test_env_names_are_unique():
    names = [yaml.safe_load(p.read_text())["name"] for p in ENV_FILES]
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_python_pin_matches_tested_interpreter_and_requires_python(path):
    pins = parse_env(path)
    assert "python" in pins, f"{path.name}: python not pinned"
    assert pins["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert Version(pins["python"] + ".0") in SpecifierSet(PYPROJECT["project"]["requires-python"])


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_holds_every_runtime_dependency_of_glfs(path):
    # glfs is installed with --no-deps (post-deploy script), so the environment
    # itself must provide everything pyproject.toml's [project] dependencies name.
    pins = parse_env(path)
    missing = set(CORE) - set(pins)
    assert not missing, f"{path.name}: lacks {sorted(missing)} from pyproject.toml dependencies"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_pins_satisfy_pyproject_specifiers(path):
    pins = parse_env(path)
    for name, version in pins.items():
        pypi = CONDA_TO_PYPI.get(name, name)
        for req in (group[pypi] for group in (CORE, WORKFLOW, SINGLECELL) if pypi in group):
            assert Version(version) in req.specifier, f"{path.name}: {name}={version} violates pyproject '{req}'"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_pins_equal_the_tested_installation(path):
    # The versions installed where the tests run are the ones the workflow is
    # tested with; the environments must not drift from them.
    pins = parse_env(path)
    checked = 0
    for name, version in pins.items():
        if name in TOOLING:
            continue
        try:
            installed = md.version(CONDA_TO_PYPI.get(name, name))
        except md.PackageNotFoundError:
            pytest.fail(f"{path.name}: {name} is pinned but not installed in the tested environment")
        assert Version(installed) == Version(version), f"{path.name}: {name}={version}, tested with {installed}"
        checked += 1
    assert checked >= len(CORE)


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_setuptools_pin_can_build_glfs(path):
    pins = parse_env(path)
    build = _requirements(PYPROJECT["build-system"]["requires"])
    assert "setuptools" in pins and "pip" in pins, f"{path.name}: needs pip and setuptools to install glfs"
    assert Version(pins["setuptools"]) in build["setuptools"].specifier


@pytest.mark.parametrize("stem", sorted(EXTRAS_BY_ENV))
def test_family_environments_carry_their_workflow_extras(stem):
    pins = parse_env(ENVS / f"{stem}.yaml")
    missing = EXTRAS_BY_ENV[stem] - set(pins)
    assert not missing, f"{stem}.yaml lacks {sorted(missing)}"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_post_deploy_script_installs_glfs_without_dependencies(path):
    script = path.with_name(path.stem + ".post-deploy.sh")
    assert script.exists(), f"{script.name} missing: glfs would not be importable in the environment"
    text = script.read_text()
    assert text.startswith("#!"), "snakemake picks the interpreter from the shebang"
    assert os.access(script, os.X_OK)
    assert re.search(r"pip install .*--no-deps.* -e \.", text)


def _conda_directives():
    """(smk file, rule, path) for every conda: directive under workflow/."""
    out = []
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        rule = None
        lines = smk.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(?:rule|checkpoint) (\w+):", line)
            if m:
                rule = m.group(1)
            if line.strip() == "conda:":
                value = lines[i + 1].strip().rstrip(",").strip("\"'")
                out.append((smk, rule, value))
            elif line.strip().startswith("conda:") and line.strip() != "conda:":
                value = line.split(":", 1)[1].strip().rstrip(",").strip("\"'")
                out.append((smk, rule, value))
    return out


def test_conda_directives_name_existing_environment_files():
    for smk, rule, value in _conda_directives():
        target = (smk.parent / value).resolve()
        assert target.parent == ENVS.resolve(), f"{smk.name} rule {rule}: conda: {value} is not in envs/"
        assert target.exists(), f"{smk.name} rule {rule}: conda: {value} does not exist"


def _job_rules():
    """(smk file, rule, body) of every rule that runs code (script/shell/run)."""
    out = []
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for m in re.finditer(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), flags=re.M):
            if re.search(r"^\s+(script|shell|run|notebook):", m.group(2), re.M):
                out.append((smk.name, m.group(1), m.group(2)))
    return out


def test_every_rule_that_runs_code_declares_a_conda_environment():
    # --sdm conda on a cluster only helps if every job gets an environment.
    rules = _job_rules()
    assert rules, "no rules found"
    missing = [f"{smk}:{rule}" for smk, rule, body in rules if not re.search(r"^\s+conda:", body, re.M)]
    assert not missing, f"rules without conda: {missing}"
