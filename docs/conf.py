"""Sphinx configuration of the glfs documentation (MyST Markdown, sphinx-book-theme, autosummary)."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

from docutils import nodes

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))

project = "glfs"
author = "the glfs developers"
copyright = "the glfs developers"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "glfs"
html_theme_options = {"show_toc_level": 2}

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "description"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_preprocess_types = True  # "ndarray of shape (n_features_in_,)" is a type, not a link target

# The repository the {repo} role links into (a file of the repository, not a page of this site).
REPO_URL = os.environ.get("GLFS_REPO_URL", "https://github.com/glfs-dev/glfs/blob/main")

#: The curated public face: the packages whose ``__all__`` the API reference lists.
API_PACKAGES = [
    "glfs",
    "glfs.tl",
    "glfs.sklearn",
    "glfs.graph",
    "glfs.scores",
    "glfs.designs",
    "glfs.evaluate",
    "glfs.simulation",
    "glfs.core",
    "glfs.core.limits",
]


def _public_names(package: str) -> list[str]:
    """The names of ``package.__all__`` that are not modules (the package-level public face)."""
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", None)
    if names is None:
        return []
    return [n for n in names if not isinstance(getattr(mod, n, None), type(sys))]


def _write_api_pages() -> None:
    """Write docs/api/<package>.md: one autosummary table of the package's ``__all__``.

    A function or class that several packages export (``glfs.laplacian_score`` is
    ``glfs.scores.laplacian_score``) is documented once, under the subpackage that owns it, and listed as a
    link on the other pages; ``glfs`` itself comes last.
    """
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    # autosummary's stubs of an earlier build would keep a name the package no longer exports
    shutil.rmtree(out / "generated", ignore_errors=True)
    owner: dict[int, str] = {}
    pages: dict[str, tuple[list[str], list[str]]] = {}
    for package in [*API_PACKAGES[1:], API_PACKAGES[0]]:
        mod = importlib.import_module(package)
        own, elsewhere = [], []
        for name in _public_names(package):
            obj = getattr(mod, name)
            if callable(obj) and id(obj) in owner:
                elsewhere.append(owner[id(obj)])
                continue
            if callable(obj):
                owner[id(obj)] = f"{package}.{name}"
            own.append(name)
        pages[package] = (own, elsewhere)
    for package in API_PACKAGES:
        own, elsewhere = pages[package]
        lines = [f"# `{package}`", "", "```{eval-rst}", f".. automodule:: {package}", "   :no-members:", ""]
        if own:
            lines += [f".. currentmodule:: {package}", "", ".. autosummary::", "   :toctree: generated", ""]
            lines += [f"   {n}" for n in own]
        elif not elsewhere:
            lines += [f"``{package}`` curates no public names yet (no ``__all__``)."]
        lines += ["```", ""]
        if elsewhere:
            lines += [f"Also exported by `{package}`, documented where they are defined:", ""]
            lines += [f"- {{py:obj}}`{target}`" for target in elsewhere]
            lines += [""]
        text = "\n".join(lines)
        page = out / f"{package}.md"
        if not page.exists() or page.read_text() != text:
            page.write_text(text)


_write_api_pages()


def repo_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{repo}`path``: a file of the repository, shown as its path and linked on the hosting site."""
    path = text.strip()
    node = nodes.reference(rawtext, "", refuri=f"{REPO_URL}/{path}")
    node += nodes.literal(path, path)
    return [node], []


def skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out what a class inherits from scikit-learn (``set_params``, ``set_fit_request``, ``score``)."""
    if getattr(obj, "__module__", None) and str(obj.__module__).startswith("sklearn."):
        return True
    return None


def drop_type_docstrings(app, what, name, obj, options, lines):
    """A module constant (a dict, a str) has its type's docstring; show none instead."""
    if what in ("data", "attribute") and lines and type(obj).__doc__ and obj.__doc__ == type(obj).__doc__:
        lines.clear()


def setup(app):
    app.add_role("repo", repo_role)
    app.connect("autodoc-skip-member", skip_foreign_members)
    app.connect("autodoc-process-docstring", drop_type_docstrings)
