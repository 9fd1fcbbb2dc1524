"""The import graph shows the architecture (docs/guides/architecture.md): the methods library at the
bottom, its adapters above it, the workflow package above those, scripts and rules on top; no
import points back up.  Read from the source with ``ast`` (nothing is imported), so a new
upward import fails here with the module and the import named."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# Layer of each module (lower = more basic).  A module may import its own layer or below.
LAYERS = {
    "glfs": {
        0: [
            "core",
            "core._result",
            "core._sparse_kernels",
            "core._validation",
            "core._out_of_core",
            "core.limits",
            "core._value_checks",
            "core._progress",
            "core._structure",
            "core._cluster",
            "core._cluster_memory",
            "core._graph_shards",
            "core._heap",
        ],
        1: [
            "graph",
            "graph._similarity",
            "graph._neighbors",
            "graph._sharded",
            "graph._ivf_blocks",
            "scores",
            "scores._genewise",
            "scores._baselines",
            "scores._lkr",
            "scores._hvg",
            "scores._moran",
            "scores._batches",
            "scores._binned",
            "designs",
            "designs._optimal",
            "designs._ufi",
            "designs._gradient",
            "designs._gradient_model",
            "designs._gradient_solver",
            "designs._gradient_path",
            "designs._budgeted",
            "simulation._scsim",
            "simulation._counts",
            "simulation._estimate",
            "simulation._estimate_batch",
        ],
        2: [
            "api",
            "evaluate",
            "evaluate._clustering",
            "evaluate._spectral",
            "evaluate._leiden",
            "evaluate._classify",
            "evaluate._mixing",
        ],
        3: ["simulation._simulate", "simulation"],
        4: ["tl", "sklearn", "_anndata_writers", "__init__"],
    },
    "glfs_workflow": {
        5: [
            "errors",
            "memory",
            "readers",
            "h5ad",
            "preprocessing",
            "files",
            "logs",
            "which",
            "findings",
            "figures",
            "report_tables",
            "sections",
            "render",
            "record",
            "fetch",
            "datasets",
            "singlecell",
            "vendored",
            "tables",
            "evaluation",
            "panel",
            "report_inputs",
            "report",
            "__init__",
        ]
    },
}
LAYER = {(pkg, m): lay for pkg, layers in LAYERS.items() for lay, mods in layers.items() for m in mods}


def _module_name(path: Path, pkg: str) -> str:
    """Dotted name of a module inside its package: ``core.result``; a subpackage is its own name."""
    rel = path.relative_to(SRC / pkg).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(pkg: str, dotted: list[str]) -> str:
    """The module an import names (``['core', 'result', 'x']`` -> ``core.result``): the longest known prefix."""
    for k in range(len(dotted), 0, -1):
        if (pkg, ".".join(dotted[:k])) in LAYER:
            return ".".join(dotted[:k])
    return ".".join(dotted) if dotted else "__init__"


def _imports(path: Path, pkg: str):
    """(line, package, module) of every import of glfs / glfs_workflow / snakemake in a file."""
    out = []
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level:
            if n.module:
                out.append((n.lineno, pkg, _resolve(pkg, n.module.split("."))))
            else:
                out += [(n.lineno, pkg, a.name) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module:
            parts = n.module.split(".")
            if parts[0] in ("glfs", "glfs_workflow", "snakemake"):
                for a in n.names:  # ``from glfs.core import limits`` imports the module core.limits
                    sub = _resolve(parts[0], parts[1:] + [a.name])
                    out.append((n.lineno, parts[0], sub if (parts[0], sub) in LAYER else _resolve(parts[0], parts[1:])))
        elif isinstance(n, ast.Import):
            for a in n.names:
                parts = a.name.split(".")
                if parts[0] in ("glfs", "glfs_workflow", "snakemake"):
                    out.append((n.lineno, parts[0], _resolve(parts[0], parts[1:])))
    return sorted(set(out))


def test_every_module_has_a_layer():
    found = {(pkg, _module_name(p, pkg)) for pkg in LAYERS for p in (SRC / pkg).rglob("*.py")}
    assert found == set(LAYER), (
        f"add new modules to LAYERS (and docs/guides/architecture.md): {sorted(found ^ set(LAYER))}"
    )


@pytest.mark.parametrize("pkg", sorted(LAYERS))
def test_no_import_points_up(pkg):
    bad = []
    for path in sorted((SRC / pkg).rglob("*.py")):
        own = LAYER[(pkg, _module_name(path, pkg))]
        for line, dep_pkg, dep in _imports(path, pkg):
            if dep_pkg == "snakemake":
                bad.append(f"{pkg}/{path.name}:{line} imports snakemake (only scripts and rules may)")
            elif LAYER.get((dep_pkg, dep), -1) > own:
                bad.append(
                    f"{pkg}/{path.name}:{line} (layer {own}) imports {dep_pkg}.{dep} (layer {LAYER[(dep_pkg, dep)]})"
                )
    assert not bad, "\n".join(bad)


def test_scripts_import_no_other_script():
    names = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    bad = []
    for path in sorted((ROOT / "scripts").glob("*.py")):
        for n in ast.walk(ast.parse(path.read_text())):
            mods = (
                [n.module]
                if isinstance(n, ast.ImportFrom) and n.module
                else [a.name for a in getattr(n, "names", [])]
                if isinstance(n, ast.Import)
                else []
            )
            bad += [f"{path.name}:{n.lineno} imports {m}" for m in mods if m.split(".")[0] in names]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The check above can fail: a core module importing an adapter is caught."""
    f = tmp_path / "graph.py"
    f.write_text("from .tl import select\nimport glfs_workflow.report\n")
    deps = _imports(f, "glfs")
    assert [(p, d) for _, p, d in deps] == [("glfs", "tl"), ("glfs_workflow", "report")]
    assert all(LAYER[(p, d)] > LAYER[("glfs", "graph")] for _, p, d in deps)


# ---- imports of the library's own modules run at the top of a module (issue 27, item 5) ----


def _function_level_own_imports(path: Path) -> list[str]:
    """``line: module`` for every import of a glfs / glfs_workflow module inside a function or method.

    Inside the library such an import hides the dependency from the module's header and, between two
    modules that import each other so, a cycle (glfs.core._cluster <-> glfs.core._out_of_core was one);
    lazy imports are kept for the optional dependencies only (dask, scanpy, faiss, ...)."""
    bad = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.ImportFrom) and (
                n.level or (n.module or "").split(".")[0] in ("glfs", "glfs_workflow")
            ):
                bad.append(f"{n.lineno}: {'.' * n.level}{n.module or ''} (in {fn.name})")
            elif isinstance(n, ast.Import):
                bad += [
                    f"{n.lineno}: {a.name} (in {fn.name})"
                    for a in n.names
                    if a.name.split(".")[0] in ("glfs", "glfs_workflow")
                ]
    return sorted(set(bad))


def test_the_library_imports_its_own_modules_at_the_top():
    bad = [
        f"{p.relative_to(ROOT)}:{b}"
        for p in sorted((SRC / "glfs").rglob("*.py"))
        for b in _function_level_own_imports(p)
    ]
    assert not bad, "imports of glfs modules inside functions (import them at the top of the module):\n" + "\n".join(
        bad
    )


def test_the_checker_sees_a_function_level_import(tmp_path):
    """The check above can fail: own-module imports inside functions and methods are caught, those at the
    top and those of other packages are not."""
    f = tmp_path / "m.py"
    f.write_text(
        "import numpy as np\nfrom glfs.core import limits\n\n\ndef f():\n    import scanpy\n"
        "    from glfs.core._cluster import map_chunks\n    return map_chunks\n\n\nclass A:\n"
        "    def g(self):\n        import glfs.graph._sharded\n        from . import files\n"
    )
    assert _function_level_own_imports(f) == [
        "13: glfs.graph._sharded (in g)",
        "14: . (in g)",
        "7: glfs.core._cluster (in f)",
    ]


# ---- no private name crosses the package boundary (issue 20, item 3) ----

#: Code outside the library: it may import only public names of public glfs modules.
OUTSIDE = ("src/glfs_workflow", "scripts", "workflow", "benchmarks/benchmarks", "Snakefile")

_SMK_FROM = re.compile(r"^[ \t]*from[ \t]+(glfs(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_SMK_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]*)", re.M)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _glfs_imports(path: Path):
    """(line, module, names) of every absolute import from the glfs package; names None for ``import glfs.x``.

    Python files are read with ``ast``; rules (``.smk``, ``Snakefile``: not Python) with a regex."""
    if path.suffix == ".py":
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and not n.level and n.module and n.module.split(".")[0] == "glfs":
                yield n.lineno, n.module, [a.name for a in n.names]
            elif isinstance(n, ast.Import):
                yield from ((n.lineno, a.name, None) for a in n.names if a.name.split(".")[0] == "glfs")
        return
    text = path.read_text()
    for m in _SMK_FROM.finditer(text):
        names = [
            w.split()[0] for w in m.group(2).split("#")[0].strip("() \n").replace("\n", ",").split(",") if w.split()
        ]
        yield text.count("\n", 0, m.start()) + 1, m.group(1), names
    for m in _SMK_IMPORT.finditer(text):
        for mod in (w.split()[0] for w in m.group(1).split("#")[0].split(",") if w.split()):
            if mod.split(".")[0] == "glfs":
                yield text.count("\n", 0, m.start()) + 1, mod, None


def _private_imports(path: Path) -> list[str]:
    """``line: what`` for every import of a private glfs module (a dotted part starting with ``_``) or name."""
    bad = []
    for line, module, names in _glfs_imports(path):
        if any(_private(part) for part in module.split(".")):
            bad.append(f"{line}: {module}")
        bad += [f"{line}: {module}.{name}" for name in names or () if _private(name)]
    return bad


def _outside_files():
    for where in OUTSIDE:
        p = ROOT / where
        if p.is_file():
            yield p
        else:
            yield from sorted(f for f in p.rglob("*") if f.suffix in (".py", ".smk") or f.name == "Snakefile")


def test_outside_code_imports_only_public_glfs_names():
    files = list(_outside_files())
    assert any(f.suffix == ".smk" for f in files) and any(f.parts[-2] == "glfs_workflow" for f in files)
    bad = [f"{f.relative_to(ROOT)}:{b}" for f in files for b in _private_imports(f)]
    assert not bad, "private glfs names used outside the library (make them public there):\n" + "\n".join(bad)


def test_the_checker_sees_a_private_import(tmp_path):
    """The check above can fail: private modules and names are caught in Python files and in rules."""
    f = tmp_path / "script.py"
    f.write_text(
        "import glfs._limits\nimport glfs.api as api\nfrom glfs.core._validation import check_X\n"
        "from glfs.graph.similarity import similarity_graph, _pca\nfrom glfs import Selection, __version__, _LAZY\n"
        "from glfs.api import METHODS as _METHODS\nfrom .helpers import _private_helper\n"
    )
    assert _private_imports(f) == [
        "1: glfs._limits",
        "3: glfs.core._validation",
        "4: glfs.graph.similarity._pca",
        "5: glfs._LAZY",
    ]
    rule = tmp_path / "rules.smk"
    rule.write_text(
        "from glfs.api import METHODS as _GLFS_METHODS\n\nrule a:\n    run:\n"
        "        from glfs.api import (\n            select,\n            _plain,  # a helper\n        )\n"
        "        import glfs._result as r, os\n"
    )
    assert _private_imports(rule) == ["5: glfs.api._plain", "9: glfs._result"]
