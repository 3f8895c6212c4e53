"""The layout rules of ``src/hetsched``, checked statically from the source (AST and text).

* **No import cycle.** Module-level imports (what runs when a module is loaded; an
  import of ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b`` unless the
  importer lives inside them) must be acyclic between modules. All imports,
  module-level and inside functions, must be acyclic between the top-level units
  (``hetsched.sim``, ``hetsched.runner``, ...): a function-level import is still a
  dependency, and a cycle of them is a layering error (``runner`` <-> ``sim``).
  ``if TYPE_CHECKING:`` imports do not count.
* **typer only in CLI files** (``cli.py``, ``*/cli.py``, ``_cliutil.py``; importing
  ``hetsched._cliutil`` counts as importing typer): the library must be usable without
  the command line.
* **No private name** (``_x``) imported from another top-level unit.
* **No source file over 600 lines** without a ``# long-file:`` comment saying why.
* **No source file citing a document outside the repository** (a design document,
  the papers' or references' folder next to the repository).
* **The experiment registry is a literal table** that names every experiment module.

The allow-lists below hold today's offenders that other work in progress removes;
each entry must still offend (a stale entry fails), so the lists only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "hetsched"
MAX_LINES = 600

# --------------------------------------------------------------------------- allow-lists (to be emptied)
#: (importer module, imported module, private name): owner of the fix
PRIVATE_ALLOWED = {
}
#: file (relative to src/hetsched) over 600 lines without a # long-file: comment: owner of the split
LONG_ALLOWED: dict[str, str] = {}
#: file citing a document outside the repository: owner
CITES_ALLOWED = {
}
#: module-level or package-level import cycles still present: owner
CYCLES_ALLOWED: dict[frozenset, str] = {}

#: a document outside the repository: the design notes, or the papers'/references' folders beside it
OUTSIDE_DOC = re.compile(r"DESIGN\.md|STYLE\.md|shared/papers|shared/reference|\.\./shared/[\w./-]+\.md")
CLI_FILES = re.compile(r"(^|/)(cli|_cliutil)\.py$")


# --------------------------------------------------------------------------- the import graph
def _modules() -> dict[str, Path]:
    mods = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


MODS = _modules()


def _resolve(importer: str, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    if MODS[importer].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


TREES = {m: ast.parse(f.read_text(), str(f)) for m, f in MODS.items()}


def _imports(mod: str) -> list[tuple[str, str, bool, int]]:
    """``(target module, imported name or "", at module level, line)`` for every hetsched import of ``mod``."""
    out: list[tuple[str, str, bool, int]] = []
    tree = TREES[mod]

    def visit(node: ast.AST, in_func: bool) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                for sub in ch.orelse:  # the else branch runs
                    visit(sub, in_func)
                continue
            func = in_func or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(ch, ast.Import):
                out.extend((a.name, "", not in_func, ch.lineno) for a in ch.names if a.name.split(".")[0] == "hetsched")
            elif isinstance(ch, ast.ImportFrom):
                t = _resolve(mod, ch.level, ch.module)
                if t.split(".")[0] == "hetsched":
                    for a in ch.names:
                        sub = f"{t}.{a.name}"
                        out.append((sub, "", not in_func, ch.lineno) if sub in MODS
                                   else (t, a.name, not in_func, ch.lineno))
            visit(ch, func)

    visit(tree, False)
    return out


IMPORTS = {m: _imports(m) for m in MODS}


def _unit(mod: str) -> str:
    return ".".join(mod.split(".")[:2])


def _module_edges() -> set[tuple[str, str]]:
    """Module-level edges, with the ``__init__`` of each package the target lives in (unless the
    importer lives in that package too: its ``__init__`` then runs first anyway)."""
    edges = set()
    for m, imps in IMPORTS.items():
        for t, _, top, _ in imps:
            if not top or t not in MODS:
                continue
            edges.add((m, t))
            parts = t.split(".")
            for i in range(1, len(parts)):
                anc = ".".join(parts[:i])
                if anc != "hetsched" and not (m == anc or m.startswith(anc + ".")):
                    edges.add((m, anc))
    return {e for e in edges if e[0] != e[1]}


def _unit_edges() -> set[tuple[str, str]]:
    return {(_unit(m), _unit(t)) for m, imps in IMPORTS.items() for t, _, _, _ in imps
            if t in MODS and _unit(m) != _unit(t)}


def _cycles(edges: set[tuple[str, str]]) -> list[frozenset]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def _where(edges: set[tuple[str, str]], comp: frozenset, unit: bool) -> str:
    lines = []
    for m, imps in IMPORTS.items():
        for t, _, top, line in imps:
            a, b = (_unit(m), _unit(t)) if unit else (m, t)
            if a in comp and b in comp and a != b:
                lines.append(f"{MODS[m].relative_to(SRC)}:{line} -> {t} ({'module' if top else 'function'} level)")
    return "\n  ".join(sorted(set(lines))[:20])


def test_cycle_finder_finds_cycles():
    assert _cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [frozenset("abc")]
    assert _cycles({("a", "b"), ("b", "c")}) == []


def test_module_level_imports_are_acyclic():
    found = [c for c in _cycles(_module_edges()) if c not in CYCLES_ALLOWED]
    assert not found, "module-level import cycles:\n" + "\n".join(
        f"{sorted(c)}\n  {_where(_module_edges(), c, False)}" for c in found)


def test_top_level_units_are_acyclic_counting_function_level_imports():
    found = [c for c in _cycles(_unit_edges()) if c not in CYCLES_ALLOWED]
    assert not found, "import cycles between top-level units (module- or function-level imports):\n" + "\n".join(
        f"{sorted(c)}\n  {_where(_unit_edges(), c, True)}" for c in found)


def test_typer_only_in_cli_files():
    bad = []
    for m, f in MODS.items():
        rel = f.relative_to(PKG).as_posix()
        if CLI_FILES.search(rel):
            continue
        for node in ast.walk(TREES[m]):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            if any(n == "typer" or n.startswith("typer.") for n in names):
                bad.append(f"{rel}:{node.lineno}")
        # the typer glue is typer too: the library must not need it
        bad += [f"{rel}:{line} (hetsched._cliutil)" for t, _, _, line in IMPORTS[m] if t == "hetsched._cliutil"]
    assert not bad, f"typer imported outside the CLI files: {bad}"


def test_no_private_name_imported_from_another_package():
    found = {}
    for m, imps in IMPORTS.items():
        for t, name, _, line in imps:
            if name.startswith("_") and not name.startswith("__") and _unit(m) != _unit(t):
                found[(m, t, name)] = f"{MODS[m].relative_to(SRC)}:{line}"
    new = {k: v for k, v in found.items() if k not in PRIVATE_ALLOWED}
    assert not new, f"private names imported across packages: {new}"
    stale = set(PRIVATE_ALLOWED) - set(found)
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"


def test_source_files_are_short_or_say_why():
    found = {}
    for f in PKG.rglob("*.py"):
        text = f.read_text()
        n = text.count("\n")
        if n > MAX_LINES and "# long-file:" not in text:
            found[f.relative_to(PKG).as_posix()] = n
    new = {k: v for k, v in found.items() if k not in LONG_ALLOWED}
    assert not new, f"files over {MAX_LINES} lines without a '# long-file:' justification: {new}"
    stale = set(LONG_ALLOWED) - set(found)
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"


def test_no_source_file_cites_a_document_outside_the_repository():
    found = {}
    for f in PKG.rglob("*"):
        if f.suffix not in (".py", ".toml", ".json") or not f.is_file():
            continue
        for k, line in enumerate(f.read_text().splitlines(), 1):
            if OUTSIDE_DOC.search(line):
                found.setdefault(f.relative_to(PKG).as_posix(), f"line {k}: {line.strip()[:100]}")
    new = {k: v for k, v in found.items() if k not in CITES_ALLOWED}
    assert not new, f"source files citing a document outside the repository: {new}"
    stale = set(CITES_ALLOWED) - set(found)
    assert not stale, f"allow-list entries no longer needed (remove them): {stale}"


@pytest.mark.parametrize("line, cites", [
    ("contract: ``../shared/DESIGN.md``", True), ("see shared/papers/seed-000", True),
    ("the logs live in ../shared/traces next to the repository", False), ("docs/architecture.md", False),
])
def test_outside_document_pattern(line, cites):
    assert bool(OUTSIDE_DOC.search(line)) == cites


def test_experiment_registry_is_a_literal_table_of_every_experiment_module():
    from hetsched.experiments import catalog as reg

    tree = ast.parse((PKG / "experiments" / "catalog.py").read_text())
    literal = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "MODULES" for t in n.targets)]
    assert literal and isinstance(literal[0].value, ast.Tuple), "MODULES must be a literal tuple"
    assert all(isinstance(e, ast.Constant) for e in literal[0].value.elts)
    registering = sorted(f.stem for f in (PKG / "experiments").glob("*.py")
                         if re.search(r"^register\(", f.read_text(), re.M))
    assert sorted(reg.MODULES) == registering
    assert "pkgutil" not in (PKG / "experiments" / "catalog.py").read_text()
