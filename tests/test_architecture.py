"""The import graph shows the architecture (docs/architecture.md): the methods library at the
bottom, its adapters above it, the workflow package above those, scripts and rules on top; no
import points back up.  Read from the source with ``ast`` (nothing is imported), so a new
upward import fails here with the module and the import named."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# Layer of each module (lower = more basic).  A module may import its own layer or below.
LAYERS = {
    "glfs": {
        0: ["_result", "_validation", "_limits", "_progress"],
        1: ["graph", "neighbors", "scores", "optimal", "baselines", "ufi", "gradient", "gradient_model", "gradient_solver", "gradient_path", "lkr", "design", "hvg", "moran", "scsim"],
        2: ["api", "evaluate", "clustering", "leiden", "classify"],
        3: ["simulate"],
        4: ["tl", "sklearn", "_anndata", "__init__"],
    },
    "glfs_workflow": {5: ["errors", "readers", "preprocessing", "files", "logs", "which", "findings", "figures", "report_tables",
                          "sections", "render", "record", "fetch", "datasets", "tables", "report", "__init__"]},
}
LAYER = {(pkg, m): lay for pkg, layers in LAYERS.items() for lay, mods in layers.items() for m in mods}


def _imports(path: Path, pkg: str):
    """(line, package, module) of every import of glfs / glfs_workflow / snakemake in a file."""
    out = []
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level:
            if n.module:
                out.append((n.lineno, pkg, n.module.split(".")[0]))
            else:
                out += [(n.lineno, pkg, a.name) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module:
            parts = n.module.split(".")
            if parts[0] in ("glfs", "glfs_workflow", "snakemake"):
                if len(parts) > 1:
                    out.append((n.lineno, parts[0], parts[1]))
                else:
                    out += [(n.lineno, parts[0], a.name if (SRC / parts[0] / f"{a.name}.py").exists() else "__init__") for a in n.names]
        elif isinstance(n, ast.Import):
            for a in n.names:
                parts = a.name.split(".")
                if parts[0] in ("glfs", "glfs_workflow", "snakemake"):
                    out.append((n.lineno, parts[0], parts[1] if len(parts) > 1 else "__init__"))
    return out


def test_every_module_has_a_layer():
    found = {(p.parent.name, p.stem) for pkg in LAYERS for p in (SRC / pkg).glob("*.py")}
    assert found == set(LAYER), f"add new modules to LAYERS (and docs/architecture.md): {sorted(found ^ set(LAYER))}"


@pytest.mark.parametrize("pkg", sorted(LAYERS))
def test_no_import_points_up(pkg):
    bad = []
    for path in sorted((SRC / pkg).glob("*.py")):
        own = LAYER[(pkg, path.stem)]
        for line, dep_pkg, dep in _imports(path, pkg):
            if dep_pkg == "snakemake":
                bad.append(f"{pkg}/{path.name}:{line} imports snakemake (only scripts and rules may)")
            elif LAYER.get((dep_pkg, dep), -1) > own:
                bad.append(f"{pkg}/{path.name}:{line} (layer {own}) imports {dep_pkg}.{dep} (layer {LAYER[(dep_pkg, dep)]})")
    assert not bad, "\n".join(bad)


def test_scripts_import_no_other_script():
    names = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    bad = []
    for path in sorted((ROOT / "scripts").glob("*.py")):
        for n in ast.walk(ast.parse(path.read_text())):
            mods = [n.module] if isinstance(n, ast.ImportFrom) and n.module else [a.name for a in getattr(n, "names", [])] if isinstance(n, ast.Import) else []
            bad += [f"{path.name}:{n.lineno} imports {m}" for m in mods if m.split(".")[0] in names]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The check above can fail: a core module importing an adapter is caught."""
    f = tmp_path / "graph.py"
    f.write_text("from .tl import select\nimport glfs_workflow.report\n")
    deps = _imports(f, "glfs")
    assert [(p, d) for _, p, d in deps] == [("glfs", "tl"), ("glfs_workflow", "report")]
    assert all(LAYER[(p, d)] > LAYER[("glfs", "graph")] for _, p, d in deps)
