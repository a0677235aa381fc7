"""Architecture rules, read from the source with ``ast`` (nothing is imported).

* The modules of ``analysis/`` and ``probes/`` import each other without a cycle, counting imports
  inside functions too (a late import only hides a cycle), and nothing in ``analysis/`` imports
  ``probes`` (the library knows nothing of the probes built on it).
* No function or method in ``analysis/``, ``probes/`` or ``scripts/`` is longer than
  ``MAX_FUNCTION_LINES`` lines (decorators not counted): a longer one is split into named steps.
"""

from __future__ import annotations

import ast
from pathlib import Path

from analysis.paths import REPO

PACKAGES = ("analysis", "probes")
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
    assert "analysis.checkpoints" in graph["analysis.train"]
    assert "probes.registry" in graph["probes.base"]  # `from probes import registry`: the submodule
    assert "probes.base" in graph["probes"]
    assert "analysis.hf" in graph["probes.cli"]  # imported inside a function
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


def long_functions(roots=("analysis", "probes", "scripts")) -> list[tuple[str, str, int]]:
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
# run to run lives in its declaration (analysis.specs.ClaimSpec). Probes are moved to it one at a time: a moved probe
# makes no other claim call, and the calls left elsewhere may only decrease.
MAX_JUDGE_KEYWORDS = 7
JUDGED_PROBES = ("attention_only", "softmax_alternatives")
OLD_CLAIM_METHODS = ("identity", "predict", "direction", "paper", "close", "bound", "within", "manual", "not_evaluated")
OLD_CLAIM_CALLS_AT_MOST = 31  # lower it as probes move to judge; never raise it


def claim_calls(root: str = "probes") -> list[tuple[str, str, ast.Call]]:
    """``(path, method, call)`` for every ledger claim call under ``root`` (a call of a claim method on ``led``)."""
    out = []
    for path in sorted((REPO / root).rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            f = getattr(node, "func", None)
            if isinstance(node, ast.Call) and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if f.value.id == "led" and f.attr in (*OLD_CLAIM_METHODS, "judge"):
                    out.append((rel, f.attr, node))
    return out


def test_a_judge_call_carries_a_handful_of_evidence():
    calls = [(p, c) for p, m, c in claim_calls() if m == "judge"]
    assert calls, "no Ledger.judge call found under probes/"
    bad = [
        f"{p}:{c.lineno} ({len(c.keywords)} keywords)"
        for p, c in calls
        if len(c.keywords) > MAX_JUDGE_KEYWORDS or any(k.arg is None for k in c.keywords)
    ]
    assert not bad, f"judge calls with more than {MAX_JUDGE_KEYWORDS} keywords or a ** expansion: {bad}"


def test_moved_probes_make_no_other_claim_call_and_the_rest_only_decrease():
    calls = claim_calls()
    moved = [f"{p}:{c.lineno} led.{m}" for p, m, c in calls if m != "judge" and p.split("/")[1] in JUDGED_PROBES]
    assert not moved, f"probes moved to Ledger.judge still call the old methods: {moved}"
    old = sum(m != "judge" for _, m, _ in calls)
    assert old <= OLD_CLAIM_CALLS_AT_MOST, (
        f"{old} claim calls in probes/ bypass Ledger.judge (at most {OLD_CLAIM_CALLS_AT_MOST}): declare the claim's "
        "constants in its ClaimSpec and record it with led.judge"
    )
