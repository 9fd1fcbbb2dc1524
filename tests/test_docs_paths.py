"""Every repository path the documentation names exists, and the docs site builds with warnings as errors.

The pages checked are docs/**/*.md, README.md, CHANGELOG.md and studies/*.md (not the raw outputs in
studies/results/). A repository path is a token that starts at one of the repository's top-level folders (``src/glfs/...``, ``workflow/rules/x.smk``,
``studies/x.md``, ``config/full.yaml``) or names one of its top-level files (``config.yaml``,
``pyproject.toml``). A path with ``*`` is a glob and must match something; a path with a placeholder
(``results/{dataset}``, ``scripts/<rule>.py``) is a pattern, and only its part before the placeholder is
checked. ``../`` at the start resolves from the page's folder (a Markdown link); any other path is read from
the repository root, as the docs' ``{repo}`` role and the prose write them. A study is a dated record: a path
it names may instead exist at a commit the same page cites (``git show <commit>:<path>``).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Top-level folders whose paths the docs name (outputs such as results/ and logs/ are not in the repository).
TOP_DIRS = (
    "src",
    "tests",
    "docs",
    "benchmarks",
    "workflow",
    "scripts",
    "envs",
    "resources",
    "profiles",
    "config",
    "studies",
    ".ci",
)
TOP_FILES = ("Snakefile", "config.yaml", "pyproject.toml", "constraints.txt", "LICENSE", "CHANGELOG.md")

_PATH = re.compile(
    r"(?<![\w./-])((?:\.\./)*)"
    r"((?:" + "|".join(re.escape(d) for d in TOP_DIRS) + r")/[\w./*{}<>-]*"
    r"|(?:" + "|".join(re.escape(f) for f in TOP_FILES) + r")(?![\w.-]))"
)
#: Generated or built files the docs may name that are not kept in the repository.
_IGNORED = ("docs/_build", "docs/api/")


def doc_pages(root: Path) -> list[Path]:
    """The pages whose paths are checked, under ``root``."""
    pages = [root / "README.md", root / "CHANGELOG.md"]
    pages += sorted(p for p in (root / "docs").rglob("*.md") if "_build" not in p.parts and "api" not in p.parts)
    pages += sorted((root / "studies").glob("*.md"))  # the pages; studies/results/ holds raw outputs
    return [p for p in pages if p.is_file()]


def named_paths(text: str) -> list[tuple[int, str, str]]:
    """(line number, ``../`` prefix, path) of every repository path named in ``text``."""
    found = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        for m in _PATH.finditer(line):
            path = re.split(r"[{<]", m.group(2))[0]  # a placeholder: check the part before it
            path = path.rstrip(".,:;")
            if path.startswith(_IGNORED):
                continue
            found.append((lineno, m.group(1), path))
    return found


_COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def _at_cited_commit(root: Path, text: str, path: str) -> bool:
    """Whether ``path`` existed at one of the commits ``text`` cites (a study quotes the record of its day)."""
    for commit in sorted(set(_COMMIT.findall(text))):
        spec = f"{commit}:{path.rstrip('/')}"
        proc = subprocess.run(["git", "-C", str(root), "cat-file", "-e", spec], capture_output=True)
        if proc.returncode == 0:
            return True
    return False


def dead_paths(pages: list[Path], root: Path) -> list[str]:
    """``page:line: path`` for every named repository path that does not exist under ``root``.

    On a page under ``studies/`` a path that existed at a commit the page cites counts as alive.
    """
    dead = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        is_study = page.relative_to(root).parts[0] == "studies"
        for lineno, up, path in named_paths(text):
            base = (page.parent / up).resolve() if up else root
            exists = any(base.glob(path)) if "*" in path else (base / path).exists()
            if not exists and not (is_study and not up and "*" not in path and _at_cited_commit(root, text, path)):
                dead.append(f"{page.relative_to(root)}:{lineno}: {up}{path}")
    return dead


def test_every_named_repository_path_exists():
    pages = doc_pages(REPO)
    assert REPO / "README.md" in pages and any(p.parent.name == "methods" for p in pages)
    dead = dead_paths(pages, REPO)
    assert not dead, "dead repository paths in the docs:\n" + "\n".join(dead)


def test_the_check_finds_a_dead_path(tmp_path):
    """A planted dead path is reported with its page and line; live paths, globs and patterns are not."""
    (tmp_path / "src" / "glfs").mkdir(parents=True)
    (tmp_path / "src" / "glfs" / "api.py").write_text("")
    (tmp_path / "workflow" / "rules").mkdir(parents=True)
    (tmp_path / "workflow" / "rules" / "graph.smk").write_text("")
    (tmp_path / "config.yaml").write_text("")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "Live: `src/glfs/api.py`, [rules](../workflow/rules/graph.smk), config.yaml, workflow/rules/*.smk,\n"
        "results/{dataset}/adata.h5ad (an output), scripts/<rule>.py is a pattern of a folder.\n"
        "Dead: {repo}`studies/no-such-study.md` and src/glfs/gone.py.\n"
    )
    (tmp_path / "scripts").mkdir()
    assert dead_paths([page], tmp_path) == [
        "docs/page.md:3: studies/no-such-study.md",
        "docs/page.md:3: src/glfs/gone.py",
    ]


def test_a_study_may_name_a_path_of_the_commit_it_cites(tmp_path):
    """A study quoting a file as it was at a cited commit is not a dead path; an uncited or never-seen one is."""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "old.md").write_text("old\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "old"], check=True)
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "docs" / "old.md").unlink()
    (tmp_path / "studies").mkdir()
    cites = tmp_path / "studies" / "cites.md"
    cites.write_text(f"docs/old.md at {commit}; docs/never.md\n")
    uncited = tmp_path / "studies" / "uncited.md"
    uncited.write_text("docs/old.md\n")
    assert dead_paths([cites, uncited], tmp_path) == [
        "studies/cites.md:1: docs/never.md",
        "studies/uncited.md:1: docs/old.md",
    ]


@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None, reason="the docs extra (sphinx) is not installed")
@pytest.mark.skipif(
    importlib.util.find_spec("myst_parser") is None, reason="the docs extra (myst-parser) is not installed"
)
def test_docs_build_with_warnings_as_errors(tmp_path):
    """``sphinx-build -W`` on docs/: a broken reference, a bad docstring or a page outside the toctree fails."""
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(tmp_path / "doctrees")]
    proc = subprocess.run([*cmd, str(REPO / "docs"), str(tmp_path / "html")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
