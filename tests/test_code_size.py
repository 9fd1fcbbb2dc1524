"""Size limits of the code: no file over 750 lines and no function over 80 lines of code in src/,
scripts/ and workflow/.  Lines are ruff-formatted lines: the formatter gives a call that does not fit
one argument a line, up to a quarter more lines than the hand layout the earlier 600 was set for.  Lines of code exclude the docstring, blank lines and
comment-only lines; a file counts all its lines.  Read from the source with ``ast``."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 750
MAX_FUNCTION_CODE_LINES = 80


def _sources():
    for top in ("src", "scripts", "workflow"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.suffix in (".py", ".smk"):
                yield p
    yield ROOT / "Snakefile"


def function_code_lines(fn: ast.AST, lines: list[str]) -> int:
    """Lines of a function that are code: not its docstring, not blank, not only a comment."""
    skip = set()
    body = fn.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        skip = set(range(body[0].lineno, body[0].end_lineno + 1))
    count = 0
    for i in range(fn.lineno, fn.end_lineno + 1):
        s = lines[i - 1].strip()
        if i not in skip and s and not s.startswith("#"):
            count += 1
    return count


def long_functions(path: Path, limit: int = MAX_FUNCTION_CODE_LINES) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = function_code_lines(node, lines)
            if n > limit:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines of code")
    return out


def test_no_file_over_the_limit():
    big = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    ]
    assert not big, f"files over {MAX_FILE_LINES} lines (split them by concern):\n" + "\n".join(big)


def test_no_function_over_the_limit():
    bad = [row for p in _sources() if p.suffix == ".py" for row in long_functions(p)]
    assert not bad, f"functions over {MAX_FUNCTION_CODE_LINES} lines of code:\n" + "\n".join(bad)


def test_the_counter_counts_code_only(tmp_path):
    """The checks above can fail: a function of 81 statements is caught, its docstring, blank
    lines and comments are not counted."""
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    f = tmp_path / "m.py"
    f.write_text(
        f'def long():\n    """Doc\n\n    string."""\n    # a comment\n\n{body}\n\ndef short():\n    """Doc."""\n    return 1\n'
    )
    tree = ast.parse(f.read_text())
    lines = f.read_text().splitlines()
    counts = {n.name: function_code_lines(n, lines) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert counts == {"long": 82, "short": 2}  # the def line and 81 assignments; the def line and the return
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        assert [r.split(":")[0] for r in long_functions(f)] == ["m.py"]
        assert long_functions(f, limit=82) == []
    finally:
        ROOT = old
