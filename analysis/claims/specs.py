"""Claims declared as data: what each claim tests, of which paper, against what, inside which hypotheses.

Every claim a probe records is declared once, at module level, by a :class:`ClaimSpec` in the probe's
``declarations`` module, registered with :func:`declare`. The probe's parts measure and record through
:class:`analysis.claims.ledger.Ledger`; the ledger looks the declaration up by the probe and the claim's name, refuses a
record whose comparison contradicts it, and stamps the record with the declaration's ``tests`` and ``paper``. The
verdict (:func:`analysis.claims.ledger.verdict_of`) reads the declared ``scope``: a claim of a run whose scope check
fails is
``out_of_scope``, never a disagreement with its paper.

Fields:

* ``name``: the claim's name; ``{...}`` stands for a part a run fills in (``"alpha_vs_relay_L{depth}"``).
* ``tests``: what a disagreement would contradict. ``"paper"``: the paper's own result (a number, range, sign or
  law the paper states); ``"derivation"``: our closed form or bound for the paper's setting (a miss is a miss of
  our derivation, not of the paper); ``"toy_model"``: a solvable model a paper proposes (a miss says the toy model
  does not describe the network); ``"software"``: an identity of our code (a miss is a bug).
* ``paper``: a key of :data:`analysis.claims.papers.PAPERS`; every claim but a software identity names one.
* ``statement``: the paper's statement the claim tests, quoted (``«...»``) from ``../shared/SEED_CATALOGUE.md``
  where the paper is a seed and the catalogue quotes it; for a software identity, the identity.
* ``comparison``: ``"identity"`` (exact up to float rounding), ``"prediction"`` (a two-sided band against an
  alternative), ``"law"`` (an exponent, slope or asymptotic law), ``"sign"`` (a predicted direction), ``"bound"``
  (one-sided, with its tightness), ``"range"`` (a published range) or ``"scope"`` (a hypothesis of a theorem,
  measured: the claims that name it are out of scope when it fails).
* ``scope``: the names of the scope checks of the same run that the statement's hypotheses need, or, when the run
  satisfies them by construction, one sentence saying how. Required for every claim but a software identity and a
  scope check itself. A sentence that begins "not met" declares the run outside the statement's hypotheses by its
  construction (a pretrained network where the law needs i.i.d. logits, a tiny network where the paper measured
  large ones): its claims are ``out_of_scope``, their measurements shown as exploration.
* ``quantity``: what is measured, with its units (optional; the record's statement says it too).
* what does not change from run to run, so that the claim's one call, :meth:`analysis.claims.ledger.Ledger.judge`,
carries
  only this run's evidence: ``figure`` (the figure that shows it), ``full`` (True: only the full preset evaluates
  it), ``source`` (where the theory or number comes from), ``hypothesis`` (the competing hypothesis whose value is
  the alternative), ``sign`` (+1 or -1: the predicted direction of a sign claim), ``relation`` (a bound's), and a
  known diagnosis of a miss: ``diagnosis`` (its text) and ``diagnosed_by`` (``{claim: status}``, the claims of the
  same run that measure its cause), and ``within_run``: why a within-run standard error may stand alone for this
  claim (the quantity is deterministic given the model, or there is no model: :mod:`analysis.claims.evidence`).
* ``replicates`` and ``looks``: a sequential design (:mod:`analysis.claims.evidence`, "Sequential replicates").
``looks``
  are the replicate counts at which the claim is judged, the last its budget; ``replicates`` the probe's config
  field that counts them (its full-preset default is the first look). A run at one look whose claim is undecided
  is run again at the next (:func:`analysis.probing.sequential.decided_run`); every look's band is at the per-look
  coverage
  that keeps the claim's overall error rate at 95%. For predictions, signs, laws and scope checks judged over
  seeds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from analysis.claims.evidence import check_looks
from analysis.claims.papers import paper as _paper

TESTS = ("paper", "derivation", "toy_model", "software")
COMPARISONS = ("identity", "prediction", "law", "sign", "bound", "range", "scope")
RELATIONS = ("<=", "<", ">=", ">")
# the ledger roles a comparison may be recorded with ("scope": any measured role; the record's role becomes "scope")
RECORDED_AS = {
    "identity": ("identity",),
    "prediction": ("prediction",),
    "law": ("prediction", "bound"),
    "sign": ("prediction",),
    "bound": ("bound",),
    "range": ("paper",),
    "scope": ("prediction", "bound", "paper", "identity"),
}
_NAME = re.compile(r"^[A-Za-z0-9_.\-]*(\{[A-Za-z0-9_]*\}[A-Za-z0-9_.\-]*)*$")


@dataclass(frozen=True)
class ClaimSpec:
    """One claim's declaration (module docstring). Refuses a bad declaration with one line naming the claim."""

    name: str
    tests: str | None = None
    comparison: str | None = None
    statement: str = ""
    paper: str | None = None
    scope: tuple[str, ...] | str = ()
    quantity: str = ""
    replicates: str = ""
    looks: tuple[int, ...] = ()
    figure: str = ""
    full: bool = False
    source: str = ""
    hypothesis: str = ""
    sign: int = 0
    relation: str = "<="
    diagnosis: str = ""
    diagnosed_by: tuple[tuple[str, str], ...] = ()
    within_run: str = ""

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name or not _NAME.match(name):
            raise ValueError(f"claim name must be letters, digits, _.- and {{...}} placeholders, got {name!r}")
        where = f"claim {name!r}"
        if self.tests is None:
            raise ValueError(f"{where}: missing field tests (one of {', '.join(TESTS)})")
        if self.tests not in TESTS:
            raise ValueError(f"{where}: tests must be one of {', '.join(TESTS)}, got {self.tests!r}")
        if self.comparison is None:
            raise ValueError(f"{where}: missing field comparison (one of {', '.join(COMPARISONS)})")
        if self.comparison not in COMPARISONS:
            raise ValueError(f"{where}: comparison must be one of {', '.join(COMPARISONS)}, got {self.comparison!r}")
        if (self.tests == "software") != (self.comparison == "identity"):
            raise ValueError(
                f"{where}: a software identity has tests 'software' and comparison 'identity' (got tests "
                f"{self.tests!r}, comparison {self.comparison!r})"
            )
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise ValueError(f"{where}: missing field statement (the paper's statement it tests, or the identity)")
        if self.paper is None and self.tests != "software":
            raise ValueError(f"{where}: missing field paper (a key of analysis.claims.papers.PAPERS)")
        if self.paper is not None:
            try:
                _paper(self.paper)
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
        scope = self.scope
        if isinstance(scope, list):
            object.__setattr__(self, "scope", tuple(scope))
            scope = self.scope
        if isinstance(scope, str):
            if not scope.strip():
                raise ValueError(f"{where}: scope must name scope checks or say how the run meets the hypotheses")
        elif not isinstance(scope, tuple) or not all(isinstance(s, str) and _NAME.match(s) and s for s in scope):
            raise ValueError(f"{where}: scope must be a tuple of scope-check names or one sentence, got {scope!r}")
        needs_scope = self.tests != "software" and self.comparison != "scope"
        if needs_scope and not scope:
            raise ValueError(
                f"{where}: missing field scope (the scope checks of its run, or how the run meets the "
                "statement's hypotheses by construction)"
            )
        if self.comparison == "scope" and scope:
            raise ValueError(f"{where}: a scope check is itself a hypothesis; it declares no scope")
        if name in (scope if isinstance(scope, tuple) else ()):
            raise ValueError(f"{where}: a claim cannot be its own scope check")
        if not isinstance(self.quantity, str):
            raise ValueError(f"{where}: quantity must be a string, got {self.quantity!r}")
        self._check_design(where)
        self._check_constants(where)

    def _check_constants(self, where: str) -> None:
        """The run-independent fields :meth:`analysis.claims.ledger.Ledger.judge` fills in."""
        for field in ("figure", "source", "hypothesis", "within_run"):
            if not isinstance(getattr(self, field), str):
                raise ValueError(f"{where}: {field} must be a string, got {getattr(self, field)!r}")
        if self.figure and not re.fullmatch(r"[A-Za-z0-9_.\-]+", self.figure):
            raise ValueError(f"{where}: figure must be a figure's name (letters, digits, _.-), got {self.figure!r}")
        if not isinstance(self.full, bool):
            raise ValueError(f"{where}: full must be true or false, got {self.full!r}")
        if self.sign not in (0, 1, -1) or isinstance(self.sign, bool):
            raise ValueError(f"{where}: sign must be 1 (above the alternative) or -1 (below), got {self.sign!r}")
        if self.sign and self.comparison not in ("sign", "scope", "law"):
            raise ValueError(f"{where}: sign is for a sign claim (or a scope check or law measured as one)")
        if isinstance(self.diagnosed_by, dict):
            object.__setattr__(self, "diagnosed_by", tuple(self.diagnosed_by.items()))
        if not isinstance(self.diagnosis, str) or bool(self.diagnosis) != bool(self.diagnosed_by):
            raise ValueError(
                f"{where}: a diagnosis names its text (diagnosis) and the claims that measure its cause "
                "(diagnosed_by: {claim: status})"
            )
        if self.relation not in RELATIONS:
            raise ValueError(f"{where}: relation must be one of {', '.join(RELATIONS)}, got {self.relation!r}")

    def _check_design(self, where: str) -> None:
        """``replicates`` and ``looks`` come together, on a comparison judged by a band over seeds."""
        if not isinstance(self.replicates, str) or (self.replicates and not self.replicates.isidentifier()):
            raise ValueError(
                f"{where}: replicates must be the config field that counts the seeds, got {self.replicates!r}"
            )
        if bool(self.replicates) != bool(self.looks):
            raise ValueError(
                f"{where}: a sequential design needs both replicates (the config field) and looks "
                "(the replicate counts judged)"
            )
        if not self.looks:
            return
        try:
            object.__setattr__(self, "looks", check_looks(self.looks))
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if self.comparison not in ("prediction", "sign", "law", "scope"):
            raise ValueError(
                f"{where}: looks take a prediction, sign, law or scope check judged over seeds, not a "
                f"{self.comparison!r} comparison"
            )

    @property
    def outside(self) -> bool:
        """True when the declaration says the run is outside the statement's hypotheses by construction."""
        return isinstance(self.scope, str) and self.scope.lower().startswith("not met")

    @property
    def scope_checks(self) -> tuple[str, ...]:
        """The names of the scope checks this claim needs (empty when the run meets them by construction)."""
        return self.scope if isinstance(self.scope, tuple) else ()

    @property
    def budget(self) -> int | None:
        """The most replicates the claim may take (its last look), or None without a sequential design."""
        return self.looks[-1] if self.looks else None

    def matches(self, name: str) -> bool:
        """True when ``name`` is this declaration's name, its placeholders filled in."""
        return bool(_pattern(self.name).match(name))

    def records_as(self, role: str) -> bool:
        """True when a claim of this declaration may be recorded with ledger role ``role``."""
        return role in RECORDED_AS[self.comparison] or (role == "scope" and self.comparison == "scope")

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "tests": self.tests,
            "comparison": self.comparison,
            "paper": self.paper,
            "statement": self.statement,
            "scope": list(self.scope) if isinstance(self.scope, tuple) else self.scope,
            "quantity": self.quantity,
            **({"replicates": self.replicates, "looks": list(self.looks)} if self.looks else {}),
            **{k: getattr(self, k) for k in ("figure", "source", "hypothesis") if getattr(self, k)},
            **({"full": True} if self.full else {}),
            **({"sign": self.sign} if self.sign else {}),
        }


def describe(specs: Iterable[ClaimSpec], details: bool = False) -> str:
    """Declarations as text: per claim ``comparison tests name (paper)`` and its statement (``details``: its
    scope and quantity too)."""
    lines = []
    for s in specs:
        lines.append(f"{s.comparison:<10} {s.tests:<10} {s.name}  ({s.paper or 'no paper'})")
        lines.append(f"    {s.statement}")
        if details:
            scope = ", ".join(s.scope) if isinstance(s.scope, tuple) else s.scope
            lines.append(f"    scope: {scope or '(none needed)'}")
            if s.quantity:
                lines.append(f"    quantity: {s.quantity}")
            if s.looks:
                lines.append(f"    looks: {', '.join(map(str, s.looks))} replicates ({s.replicates})")
    return "\n".join(lines)


def _pattern(name: str) -> re.Pattern:
    parts = re.split(r"\{[A-Za-z0-9_]*\}", name)
    return re.compile("^" + "[A-Za-z0-9_.\\-]+?".join(re.escape(p) for p in parts) + "$")


class Declarations:
    """The declared claims of one probe, in declaration order; a name resolves to its declaration."""

    def __init__(self, probe: str, specs: Iterable[ClaimSpec]):
        self.probe = probe
        self.specs: list[ClaimSpec] = []
        for spec in specs:
            if not isinstance(spec, ClaimSpec):
                raise ValueError(f"declare({probe!r}, ...) takes ClaimSpec objects, got {type(spec).__name__}")
            if any(s.name == spec.name for s in self.specs):
                raise ValueError(f"claim {spec.name!r} is declared twice in {probe!r}")
            self.specs.append(spec)
        for spec in self.specs:
            for ref in spec.scope_checks:
                target = self.lookup(ref)
                if target is None or target.comparison != "scope":
                    raise ValueError(
                        f"claim {spec.name!r}: scope check {ref!r} is not a declared claim with comparison 'scope' "
                        f"in {probe!r}"
                    )

    def lookup(self, name: str) -> ClaimSpec | None:
        """The declaration of ``name``: an exact name first, then the first template that matches."""
        for spec in self.specs:
            if spec.name == name:
                return spec
        for spec in self.specs:
            if "{" in spec.name and spec.matches(name):
                return spec
        return None

    def __iter__(self) -> Iterator[ClaimSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)


_REGISTRY: dict[str, Declarations] = {}


def declare(probe: str, *specs: ClaimSpec) -> Declarations:
    """Register ``specs`` as the declared claims of ``probe`` (the ledger context's name before any ``[tag]``) and
    return them. Declaring the same probe again replaces its declarations (a module reloaded in a notebook)."""
    if not isinstance(probe, str) or not probe or "[" in probe:
        raise ValueError(f"probe must be a probe name (a ledger context without a tag), got {probe!r}")
    decl = Declarations(probe, specs)
    _REGISTRY[probe] = decl
    return decl


def declarations(probe: str) -> Declarations | None:
    """The registered declarations of ``probe`` (None when it declares none)."""
    return _REGISTRY.get(probe)


def registered() -> dict[str, Declarations]:
    """Every registered probe's declarations (import :mod:`probes` first to register the workbench's own)."""
    return dict(_REGISTRY)


def spec_for(context: str, name: str) -> ClaimSpec | None:
    """The declaration of claim ``name`` made in ledger ``context`` (``"probe"`` or ``"probe[tag]"``)."""
    decl = _REGISTRY.get(context.split("[", 1)[0])
    return None if decl is None else decl.lookup(name)
