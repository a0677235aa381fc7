"""Architecture rules, read from the source with ``ast`` (nothing is imported).

* The modules of ``analysis/`` and ``probes/`` import each other without a cycle, counting imports
  inside functions too (a late import only hides a cycle), and nothing in ``analysis/`` imports
  ``probes`` (the library knows nothing of the probes built on it).
* No function or method in ``analysis/``, ``probes/`` or ``scripts/`` is longer than
  ``MAX_FUNCTION_LINES`` lines (decorators not counted): a longer one is split into named steps.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from analysis.core.paths import REPO

PACKAGES = ("analysis", "probes", "companions")
MAX_FUNCTION_LINES = 100
# Functions allowed to be longer for now, each with the reason. Nothing else may be added here.
LONG_FUNCTIONS_ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the packages."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that the file imports anywhere (module level, functions, classes)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from pkg import sub` imports the submodule `pkg.sub`; `from mod import f` imports `mod`
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a non-module: its nearest module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = package_modules()
    known = set(mods)
    return {name: imported_modules(path, name, known) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (depth-first search, three colours)."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if colour[nxt] == 0 and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if colour[node] == 0 and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_the_imports_it_must(tmp_path):
    # guards the parser: module-level, function-level, `from pkg import submodule` and relative imports
    graph = import_graph()
    assert "analysis.training.checkpoints" in graph["analysis.training.train"]
    assert "analysis.probing.registry" in graph["analysis.probing.base"]  # `from probes import registry`: the submodule
    assert "analysis.probing.base" in graph["probes"]
    assert "analysis.zoo.hf" in graph["analysis.probing.cli"]  # imported inside a function
    known = {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.a", "pkg.sub.c"}
    src = tmp_path / "c.py"
    src.write_text("from . import a\nfrom ..b import f\ndef g():\n    import pkg.sub.c.x\n    from pkg import sub\n")
    assert imported_modules(src, "pkg.sub.c", known) == {"pkg.sub.a", "pkg.b", "pkg.sub"}
    init = tmp_path / "__init__.py"
    init.write_text("from .a import x\n")
    assert imported_modules(init, "pkg", known) == {"pkg.a"}


def test_no_import_cycle_in_analysis_and_probes():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_analysis_does_not_import_probes():
    bad = {
        mod: sorted(t for t in targets if t == "probes" or t.startswith("probes."))
        for mod, targets in import_graph().items()
        if mod.split(".")[0] == "analysis"
    }
    assert not {m: t for m, t in bad.items() if t}, "analysis imports probes"


def long_functions(roots=("analysis", "probes", "companions", "scripts", "bench")) -> list[tuple[str, str, int]]:
    out = []
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = node.end_lineno - node.lineno + 1
                    if n > MAX_FUNCTION_LINES:
                        out.append((rel, node.name, n))
    return out


def test_no_function_longer_than_the_limit():
    found = long_functions()
    too_long = [f"{path}:{name} ({n} lines)" for path, name, n in found if (path, name) not in LONG_FUNCTIONS_ALLOWED]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: split them: {too_long}"


def test_allowed_long_functions_still_exist():
    # an allowance is removed once the function is split (or gone)
    for path, name in sorted(LONG_FUNCTIONS_ALLOWED):
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        lengths = [
            n.end_lineno - n.lineno + 1
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
        ]
        assert any(n > MAX_FUNCTION_LINES for n in lengths), f"{path}:{name} is no longer long: drop its allowance"


# ---------------------------------------------------------------------------------------------- the one claim call
# A declared claim is recorded by one call, Ledger.judge, carrying this run's evidence; what does not change from
# run to run lives in its declaration (analysis.claims.specs.ClaimSpec). The comparison methods behind judge are called
# directly only where judge cannot carry the claim in a handful of keywords, each place with its reason.
MAX_JUDGE_KEYWORDS = 7
OLD_CLAIM_METHODS = ("identity", "predict", "direction", "paper", "close", "bound", "within", "manual", "not_evaluated")
DIRECT_CLAIM_CALLS_ALLOWED = {
    # predict_law's shared claim: every caller's law tuple words its own hypothesis and source, and passes its seed
    # and figure, for claims of four probes
    ("analysis/probing/part_laws.py", "_paired_claim"),
    # a slope whose figure, full-preset need and diagnosis all depend on the run: nine keywords on either branch
    ("probes/representational_collapse/distances.py", "_slope_claim"),
}


CLAIMING = ("probes", "companions", "analysis/probing")  # where claims are recorded


def claim_calls(roots: tuple[str, ...] = CLAIMING) -> list[tuple[str, str, str, ast.Call]]:
    """``(path, enclosing function, method, call)`` for every ledger claim call under ``roots`` (a claim method
    called on ``led``)."""
    out = []
    for path in sorted(p for root in roots for p in (REPO / root).rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for fn in [*reversed(functions), tree]:  # ast.walk lists a function before those nested in it
            for node in ast.walk(fn):
                f = getattr(node, "func", None)
                if isinstance(node, ast.Call) and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    if f.value.id == "led" and f.attr in (*OLD_CLAIM_METHODS, "judge"):
                        out.append((rel, getattr(fn, "name", "<module>"), f.attr, node))
    # a call inside nested functions is seen once per enclosing function: keep the innermost (first listed)
    seen, unique = set(), []
    for rel, fn, method, node in out:
        if id(node) not in seen:
            seen.add(id(node))
            unique.append((rel, fn, method, node))
    return unique


def test_a_judge_call_carries_a_handful_of_evidence():
    calls = [(p, c) for p, _, m, c in claim_calls() if m == "judge"]
    assert calls, "no Ledger.judge call found under probes/"
    bad = [
        f"{p}:{c.lineno} ({len(c.keywords)} keywords)"
        for p, c in calls
        if len(c.keywords) > MAX_JUDGE_KEYWORDS or any(k.arg is None for k in c.keywords)
    ]
    assert not bad, f"judge calls with more than {MAX_JUDGE_KEYWORDS} keywords or a ** expansion: {bad}"


def test_claims_are_recorded_with_judge_except_where_allowed():
    direct = {(p, fn) for p, fn, m, _ in claim_calls() if m != "judge"}
    extra = sorted(direct - DIRECT_CLAIM_CALLS_ALLOWED)
    assert not extra, (
        f"claim calls that bypass Ledger.judge: {extra}; declare the claim's constants in its ClaimSpec and record "
        "it with led.judge"
    )
    gone = sorted(DIRECT_CLAIM_CALLS_ALLOWED - direct)
    assert not gone, f"allowed direct claim calls that no longer exist: drop their allowance: {gone}"


# ---------------------------------------------------------------------------------------------- the library's layout
# analysis/ is grouped by job into sub-packages (each __init__ says what it is for); the old flat paths are one-line
# shims (analysis/_moved.py) kept for one release. No module of the library, the probes, the companions, scripts/ or
# bench/ is over MAX_MODULE_LINES lines (theory data tables, analysis/theory/, are exempt; tests are not code others
# build on). A long table of data is split by its groups, as the probes' claim declarations are (declarations/).
MAX_MODULE_LINES = 400
SUBPACKAGES = ("core", "zoo", "data", "training", "claims", "notebook", "probing", "theory", "figures")
CODE_DIRS = ("analysis", "probes", "companions", "scripts", "bench")
SHIM = re.compile(
    r'^""".*"""\n\nfrom analysis\._moved import moved\n\n'
    r'moved\(__name__, "((?:analysis|companions)\.[a-z_.]+)"(?:, callable_as="\w+")?\)\n$',
    re.S,
)


def test_analysis_is_grouped_by_job():
    top = sorted(p.name for p in (REPO / "analysis").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert top == sorted(SUBPACKAGES), top
    for pkg in SUBPACKAGES:
        init = (REPO / "analysis" / pkg / "__init__.py").read_text(encoding="utf-8")
        assert ast.get_docstring(ast.parse(init)), f"analysis/{pkg}/__init__.py says what the package is for"
    for path in sorted((REPO / "analysis").glob("*.py")):
        if path.name in ("__init__.py", "_moved.py"):
            continue
        m = SHIM.match(path.read_text(encoding="utf-8"))
        assert m, f"{path.name}: a module of the library lives in a sub-package; the top level holds only shims"
        target = m.group(1)
        assert target.split(".")[1] in SUBPACKAGES and target.endswith("." + path.stem), target
        assert (REPO / (target.replace(".", "/") + ".py")).exists(), target


def test_old_paths_are_the_new_modules_with_a_warning():
    import importlib
    import sys
    import warnings

    shims = [p for p in sorted((REPO / "analysis").glob("*.py")) if p.name not in ("__init__.py", "_moved.py")]
    shims += [p for p in sorted((REPO / "probes").glob("*.py")) if p.name not in ("__init__.py", "__main__.py")]
    for path in shims:
        old = f"{path.parent.name}.{path.stem}"
        target = SHIM.match(path.read_text(encoding="utf-8")).group(1)
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mod = importlib.import_module(old)
        new = importlib.import_module(target)
        assert mod is new or (
            callable(mod) and all(getattr(mod, k) is v for k, v in vars(new).items() if not k.startswith("__"))
        ), old
        assert any(issubclass(w.category, DeprecationWarning) and target in str(w.message) for w in caught), old


def test_no_module_longer_than_the_limit():
    long = set()
    for path in sorted(p for d in CODE_DIRS for p in (REPO / d).rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("analysis/theory/"):
            continue
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_MODULE_LINES:
            long.add(rel)
    assert not long, f"modules over {MAX_MODULE_LINES} lines: split them by job: {sorted(long)}"


def test_no_internal_code_uses_an_old_path():
    """The repository imports the new paths: an old one is for users' code, for one release."""
    old = sorted(p.stem for p in (REPO / "analysis").glob("*.py") if p.name not in ("__init__.py", "_moved.py"))
    moved = sorted(p.stem for p in (REPO / "probes").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    pattern = re.compile(
        rf"(?<![\w.])analysis\.({'|'.join(old)})\b|from analysis import .*\b({'|'.join(old)})\b"
        rf"|(?<![\w.])probes\.({'|'.join(moved)})\b(?!\()|from probes import .*\b({'|'.join(moved)})\b"
    )
    bad = []
    for root in ("analysis", "probes", "companions", "scripts", "bench", "tests", "notebooks"):
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix not in (".py", ".ipynb") or path.parent in (REPO / "analysis", REPO / "probes"):
                continue
            if path.name == "test_architecture.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    bad.append(f"{path.relative_to(REPO)}:{n}")
    assert not bad, bad


def test_an_old_module_path_leaves_the_function_of_the_same_name_callable():
    """``import probes.sweep`` (the old module path) must not turn ``probes.sweep(...)`` into a module."""
    import importlib
    import sys
    import warnings

    import probes

    sys.modules.pop("probes.sweep", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("probes.sweep")
    from analysis.probing import sweep as new

    assert probes.sweep is old and callable(probes.sweep)
    assert old.sweep_results is new.sweep_results and old.local_client is new.local_client
    with pytest.raises(ValueError, match="unknown probe"):
        probes.sweep("no_such_probe", {"seed": [0, 1]}, preset="smoke")


def test_probes_holds_only_experiments():
    """Every sub-package of probes/ is a probe; its only modules are the package's own and the one-release shims of
    the machinery and companions that moved (analysis/probing/, companions/)."""
    from analysis.probing.registry import package_probes

    pkgs = sorted(p.name for p in (REPO / "probes").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert pkgs == sorted(package_probes()), pkgs
    for path in sorted((REPO / "probes").glob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        m = SHIM.match(path.read_text(encoding="utf-8"))
        assert m and m.group(1).startswith(("analysis.probing.", "companions.")), f"probes/{path.name} is not a probe"
    main = (REPO / "probes" / "__main__.py").read_text(encoding="utf-8")
    assert "analysis.probing.cli" in main and len(main.splitlines()) < 20, "python -m probes is a short entry point"
