"""The claims a probe's code declares, read from its source without running anything.

A claim is made by one call on a ledger in a probe's code (``led.predict("name", ...)``, ``led.identity``,
``led.direction``, ``led.bound``, ``led.paper``, ``led.not_evaluated``, ``led.manual``). This module parses a
probe's modules (:mod:`ast`; nothing is imported or run) and lists every such call, a :class:`Site`: the claim's
name as written (a literal, or an f-string template such as ``relay_alpha_L{L}`` whose ``{...}`` parts are
filled at run time), its role, statement, source and seed-paper key, and where it stands (module, line,
function, part). A name or source held in a variable is followed to the value it is given: an assignment or
``for`` loop in the same function, a module constant (also one imported from another ``probes`` module), or a
parameter, through the calls of that function in the same package.

So the claims inventory exists before any notebook runs: a claim added to a part module is listed at once,
with its statement and source, by::

    python -m probes claims NAME --declared [--json PATH|-]

and :func:`match` finds the site behind a claim of a committed ledger (``tests/test_declared.py`` checks that
every committed claim has one, of the same role).
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["LAW_STATEMENT", "SLOPE_STATEMENT", "Site", "declared_sites", "format_sites", "match", "probe_files"]

PROBES_DIR = Path(__file__).resolve().parent
# ledger methods that make a claim -> the role they give (None: the call names its role)
METHODS = {
    "identity": "identity",
    "predict": "prediction",
    "direction": "prediction",
    "paper": "paper",
    "bound": "bound",  # unless it passes role=
    "not_evaluated": None,
    "manual": None,
}
_LEDGER_NAMES = ("led", "ledger")  # how probe code names the ledger it writes
# shared claim helpers (probes.parts) -> (role, the positions of their claim-spec arguments, their keywords, the
# position and keyword of the Measured(subject, ...) whose subject starts every statement): each spec a tuple
# (name, alternative, hypothesis, source), whose strings read (name, hypothesis, source) once the numeric
# alternative is left out
HELPERS = {
    "predict_law": ("prediction", (2,), ("law",), (3, "what")),
    "predict_law_and_slope": ("prediction", (3, 4), ("law", "slope"), (5, "what")),
}
# the statements the law helpers of probes.parts write (there the law's values or the slope's level are appended)
LAW_STATEMENT = "{subject}: the mean {quantity} is its exact law"
SLOPE_STATEMENT = "{subject}: ln(mean {quantity})'s slope in ln {x} is its law's"
# the statement each claim spec of a helper gets
TEMPLATES = {"predict_law": (LAW_STATEMENT,), "predict_law_and_slope": (LAW_STATEMENT, SLOPE_STATEMENT)}
_MEASURED_FIELDS = ("subject", "x", "quantity", "units", "slope_quantity")
_MAX_EXPANSION = 32  # the most templates one f-string expands to (its fields' known values multiplied)


@dataclass(frozen=True)
class Site:
    """One claim-making call in a probe's source."""

    probe: str
    names: tuple[str, ...]  # the claim names it can make: literals or f-string templates ("alpha_L{L}")
    role: str | None  # None only where the role is computed at run time
    statement: str | None  # the statement as written (template), where it is a literal or f-string
    source: str | None
    seed: str | None
    module: str  # path relative to the repository ("probes/icl_gd/depth.py")
    line: int
    function: str
    part: str | None  # the part module's PART_NAME (or the module's name), None outside a part
    method: str  # the ledger method called

    def patterns(self) -> list[re.Pattern]:
        """One regular expression per name: literal text exact, each ``{...}`` any text (maybe empty)."""
        return [_template_re(n) for n in self.names]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"names": list(self.names)}


@cache
def _template_re(template: str) -> re.Pattern:
    pieces = re.split(r"(\{[^{}]*\})", template)
    return re.compile("".join(".*?" if p.startswith("{") and p.endswith("}") else re.escape(p) for p in pieces))


def probe_files(probe: str) -> list[Path]:
    """The source files of a probe: its package ``probes/<probe>/``, or a notebook companion module
    (``probes/overview.py``, ``probes/real_models.py``: the claims of the overview and real-model notebooks);
    ``ValueError`` naming the probes that have either."""
    from probes.registry import COMPANION_MODULES

    packages = sorted(p.name for p in PROBES_DIR.iterdir() if (p / "__init__.py").is_file())
    if probe in packages:
        return sorted((PROBES_DIR / probe).glob("*.py"))
    if probe in COMPANION_MODULES:
        return [PROBES_DIR / f"{probe}.py"]
    known = packages + sorted(COMPANION_MODULES)
    raise ValueError(f"probe must be one whose source declares claims: {', '.join(known)}; got {probe!r}")


# --------------------------------------------------------------------------------------------------- parsing
class _Module:
    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                child._parent = node  # type: ignore[attr-defined]
        self.functions = {
            n.name: n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.part = None
        for n in self.tree.body:
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PART_NAME" for t in n.targets):
                if isinstance(n.value, ast.Constant):
                    self.part = n.value.value
        if self.part is None and any(isinstance(n, ast.FunctionDef) and n.name == "measure" for n in self.tree.body):
            self.part = path.stem


@cache
def _module(path: Path) -> _Module:
    return _Module(path)


def _module_of(dotted: str) -> Path | None:
    """The file of a ``probes.*`` module (``None`` for anything else)."""
    head, _, rest = dotted.partition(".")
    if head != "probes":
        return None
    base = PROBES_DIR.joinpath(*rest.split(".")) if rest else PROBES_DIR
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _enclosing(node: ast.AST) -> ast.FunctionDef | None:
    while hasattr(node, "_parent"):
        node = node._parent  # type: ignore[attr-defined]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


class _Resolver:
    """The string values an expression can take, followed through names (module docstring)."""

    def __init__(self, files: list[Path]):
        self.files = files
        self.depth = 0

    def values(self, expr: ast.AST | None, mod: _Module, fn: ast.AST | None) -> list[Any]:
        """Candidates: a ``str`` (literal or f-string template) or a tuple of them (a sequence literal)."""
        if expr is None or self.depth > 16:  # deep enough for any real chain; stops a name defined by itself
            return []
        self.depth += 1
        try:
            return self._values(expr, mod, fn)
        finally:
            self.depth -= 1

    def _values(self, expr: ast.AST, mod: _Module, fn: ast.AST | None) -> list[Any]:
        if isinstance(expr, ast.Constant):
            return [expr.value] if isinstance(expr.value, str) else []
        if isinstance(expr, ast.JoinedStr):  # f"alpha_L{L}" -> "alpha_L{L}"; a field that names a string, filled in
            out = [""]
            for v in expr.values:
                if isinstance(v, ast.Constant):
                    fill = [str(v.value)]
                else:
                    known = (
                        [x for x in self.values(v.value, mod, fn) if isinstance(x, str)]
                        if (isinstance(v.value, ast.Name) and v.format_spec is None and v.conversion == -1)
                        else []
                    )
                    fill = known or ["{" + ast.unparse(v.value) + "}"]
                out = [a + b for a in out for b in fill][:_MAX_EXPANSION]
            return out
        if isinstance(expr, ast.Tuple | ast.List):
            flat: list[str] = []
            for e in expr.elts:
                flat += [v for v in self.values(e, mod, fn) if isinstance(v, str)]
            return [tuple(flat)]
        if isinstance(expr, ast.GeneratorExp | ast.ListComp):
            return [tuple(v for v in self.values(expr.elt, mod, fn) if isinstance(v, str))]
        if isinstance(expr, ast.IfExp):
            return self.values(expr.body, mod, fn) + self.values(expr.orelse, mod, fn)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):  # "a" + f"{b}", ["a"] + ["b"]
            left, right = self.values(expr.left, mod, fn), self.values(expr.right, mod, fn)
            return [a + b for a in left for b in right if type(a) is type(b)]  # strings, or sequences joined
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            i = expr.slice.value
            return [
                v[i]
                for v in self.values(expr.value, mod, fn)
                if isinstance(v, tuple) and isinstance(i, int) and -len(v) <= i < len(v)
            ]
        if isinstance(expr, ast.Name):
            return self.name(expr.id, mod, fn, expr)
        return []

    def elements(self, expr: ast.AST, mod: _Module, fn: ast.AST | None) -> list[Any]:
        """Candidates of one element of the sequence ``expr`` (a ``for`` loop's target)."""
        out: list[Any] = []
        if isinstance(expr, ast.Tuple | ast.List):
            for e in expr.elts:
                out += self.values(e, mod, fn)
            return out
        for v in self.values(expr, mod, fn):
            out += list(v) if isinstance(v, tuple) else []
        return out

    def name(self, var: str, mod: _Module, fn: ast.AST | None, at: ast.AST) -> list[Any]:
        out: list[Any] = []
        if fn is not None:
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        out += self._bind(target, node.value, var, mod, fn, loop=False)
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    out += self._bind(node.target, node.value, var, mod, fn, loop=False)
                elif isinstance(node, ast.For | ast.comprehension):
                    out += self._bind(node.target, node.iter, var, mod, fn, loop=True)
            if out:
                return out
            args = fn.args  # type: ignore[attr-defined]
            params = [a.arg for a in args.posonlyargs + args.args]
            if var in params or var in [a.arg for a in args.kwonlyargs]:
                return self._from_callers(fn.name, var, params.index(var) if var in params else None)  # type: ignore
        for node in mod.tree.body:  # a module constant, or one imported from another probes module
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    out += self._bind(target, node.value, var, mod, None, loop=False)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                out += self._bind(node.target, node.value, var, mod, None, loop=False)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == var and (path := _module_of(node.module)) is not None:
                        other = _module(path)
                        out += self.name(alias.name, other, None, at)
        return out

    def _bind(self, target: ast.AST, value: ast.AST, var: str, mod: _Module, fn, loop: bool) -> list[Any]:
        if isinstance(target, ast.Name):
            if target.id != var:
                return []
            return self.elements(value, mod, fn) if loop else self.values(value, mod, fn)
        if isinstance(target, ast.Tuple):
            for i, t in enumerate(target.elts):
                if isinstance(t, ast.Name) and t.id == var:
                    if not loop and isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                        return self.values(value.elts[i], mod, fn)
                    if loop and isinstance(value, ast.Tuple | ast.List):
                        out: list[Any] = []
                        for row in value.elts:
                            if isinstance(row, ast.Tuple) and len(row.elts) == len(target.elts):
                                out += self.values(row.elts[i], mod, fn)
                        return out
        return []

    def _from_callers(self, function: str, var: str, position: int | None) -> list[Any]:
        out: list[Any] = []
        for path in self.files:
            mod = _module(path)
            for node in ast.walk(mod.tree):
                if not isinstance(node, ast.Call):
                    continue
                callee = (
                    node.func.id
                    if isinstance(node.func, ast.Name)
                    else (node.func.attr if isinstance(node.func, ast.Attribute) else None)
                )
                if callee != function:
                    continue
                arg = next((k.value for k in node.keywords if k.arg == var), None)
                if arg is None and position is not None and position < len(node.args):
                    arg = node.args[position]
                out += self.values(arg, mod, _enclosing(node))
        return out


def _dict_keywords(expr: ast.AST, fn: ast.AST | None) -> dict[str, ast.AST]:
    """The keywords a ``**name`` passes: those of ``name = dict(k=...)`` or ``name = {"k": ...}`` in ``fn``."""
    if not isinstance(expr, ast.Name) or fn is None:
        return {}
    out: dict[str, ast.AST] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
                out.update({k.arg: k.value for k in value.keywords if k.arg})
            elif isinstance(value, ast.Dict):
                out.update(
                    {
                        k.value: v
                        for k, v in zip(value.keys, value.values, strict=True)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    }
                )
    return out


def _first(values: list[Any]) -> str | None:
    """The string an argument takes; where it can take several (callers pass different ones), all of them."""
    strings = list(dict.fromkeys(v for v in values if isinstance(v, str)))
    return " | ".join(strings) if strings else None


def _names(values: list[Any]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        for s in v if isinstance(v, tuple) else (v,):
            if s not in out:
                out.append(s)
    return tuple(out)


@cache
def _sites(probe: str, files: tuple[Path, ...]) -> tuple[Site, ...]:
    resolver = _Resolver(list(files))
    repo = PROBES_DIR.parent
    sites = []
    for path in files:
        mod = _module(path)
        for node in ast.walk(mod.tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in METHODS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in _LEDGER_NAMES
                and node.args
            ):
                continue
            fn = _enclosing(node)
            kw = _given_keywords(fn)
            for k in node.keywords:  # **common: the keywords of a dict built in the same function
                kw.update({k.arg: k.value} if k.arg else _dict_keywords(k.value, fn))
            role = METHODS[node.func.attr]
            if "role" in kw:
                role = _first(resolver.values(kw["role"], mod, fn))
            sites.append(
                Site(
                    probe=probe,
                    names=_names(resolver.values(node.args[0], mod, fn)),
                    role=role,
                    statement=_first(resolver.values(kw.get("statement"), mod, fn)),
                    source=_first(resolver.values(kw.get("source"), mod, fn)),
                    seed=_first(resolver.values(kw.get("seed"), mod, fn)),
                    module=str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path),
                    line=node.lineno,
                    function=fn.name if fn is not None else "<module>",
                    part=mod.part,
                    method=node.func.attr,
                )
            )
        sites += _helper_sites(probe, path, mod, resolver, repo)
    return tuple(sorted(sites, key=lambda s: (s.module, s.line)))


def _helper_sites(probe: str, path: Path, mod: _Module, resolver: _Resolver, repo: Path) -> list[Site]:
    """The claims a call of a shared helper (:data:`HELPERS`) makes: one site per claim-spec argument."""
    out = []
    for node in ast.walk(mod.tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if callee not in HELPERS:
            continue
        role, positions, keywords, (what_at, what_kw) = HELPERS[callee]
        fn = _enclosing(node)
        kw = {**_given_keywords(fn), **{k.arg: k.value for k in node.keywords if k.arg}}
        what = _measured_words(
            _call_made(node.args[what_at] if what_at < len(node.args) else kw.get(what_kw), fn), resolver, mod, fn
        )
        for position, keyword, template in zip(positions, keywords, TEMPLATES[callee], strict=True):
            slope_of = (
                {"quantity": what["slope_quantity"]} if template is SLOPE_STATEMENT and "slope_quantity" in what else {}
            )
            statement = template.format(**(what | slope_of)) if what else None
            spec = node.args[position] if position < len(node.args) else kw.get(keyword)
            for value in resolver.values(spec, mod, fn):
                if not (isinstance(value, tuple) and len(value) >= 3):
                    continue
                name, source = value[0], value[2]
                out.append(
                    Site(
                        probe=probe,
                        names=(name,),
                        role=role,
                        statement=statement,
                        source=source,
                        seed=_first(resolver.values(kw.get("seed"), mod, fn)),
                        module=str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path),
                        line=node.lineno,
                        function=fn.name if fn is not None else "<module>",
                        part=mod.part,
                        method=callee,
                    )
                )
    return out


def _given_keywords(fn: ast.AST | None) -> dict[str, ast.AST]:
    """The defaults a claim function gives its ledger (``led = led.given(seed=..., figure=...)``), by keyword."""
    out: dict[str, ast.AST] = {}
    for n in ast.walk(fn) if fn is not None else ():
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Attribute)
            and n.value.func.attr == "given"
            and any(isinstance(t, ast.Name) and t.id in _LEDGER_NAMES for t in n.targets)
        ):
            out.update({k.arg: k.value for k in n.value.keywords if k.arg})
    return out


def _measured_words(call: ast.Call | None, resolver: _Resolver, mod: _Module, fn: ast.AST | None) -> dict[str, str]:
    """The words of a ``Measured(subject, x, quantity, ...)`` call, as written (templates), for a statement: the
    slope's quantity is ``slope_quantity`` where given; ``{}`` where the subject cannot be read."""
    if call is None:
        return {}
    args = dict(zip(_MEASURED_FIELDS, call.args, strict=False)) | {k.arg: k.value for k in call.keywords if k.arg}
    words = {k: _first(resolver.values(v, mod, fn)) for k, v in args.items()}
    words = {k: v for k, v in words.items() if v is not None}
    if not {"subject", "quantity", "x"} <= set(words):
        return {}
    return words


def _call_made(expr: ast.AST | None, fn: ast.AST | None) -> ast.Call | None:
    """The call behind ``expr``: the expression itself, or the last call assigned to that name in ``fn``."""
    if isinstance(expr, ast.Call) or expr is None:
        return expr
    if isinstance(expr, ast.Name) and fn is not None:
        made = [
            n.value
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)
        ]
        return made[-1] if made else None
    return None


def declared_sites(probe: str, files: list[str | Path] | None = None) -> list[Site]:
    """Every claim-making call in ``probe``'s source (:func:`probe_files`, or the given ``files``), in module and
    line order (module docstring). Read once per process: a module edited since is read again only in a new one."""
    paths = tuple(Path(f).resolve() for f in files) if files is not None else tuple(probe_files(probe))
    return list(_sites(probe, paths))


def match(sites: list[Site], name: str, role: str | None = None) -> list[Site]:
    """The sites that can make a claim called ``name`` (of ``role``, if given)."""
    return [s for s in sites if (role is None or s.role == role) and any(p.fullmatch(name) for p in s.patterns())]


def format_sites(sites: list[Site], source: bool = False) -> str:
    """A site per block: ``role name  (module:line; part; seed)``, then its statement (and source)."""
    lines = []
    for s in sites:
        where = "; ".join(
            x for x in (f"{s.module}:{s.line}", s.part and f"part {s.part}", s.seed and f"seed {s.seed}") if x
        )
        names = " | ".join(s.names) or "(name computed at run time)"
        lines.append(f"{s.role or '?':<10} {names}  ({where})")
        if s.method == "not_evaluated":
            lines.append("    (not evaluated here: the reason is given at run time)")
        elif s.statement:
            lines.append(f"    {s.statement}")
        if source and s.source:
            lines.append(f"    source: {s.source}")
    return "\n".join(lines)
