"""The :class:`Ledger` itself: an ordered collection of claims, with its counts, re-judging and JSON form, the
:class:`Given` view that fills in a claim function's default keywords, and :func:`collect` for a notebook.

Its claim methods come from its bases: the roles (:mod:`analysis.claims.predictions`), the comparisons
(:mod:`analysis.claims.comparisons`), the one call of a declared claim (:mod:`analysis.claims.judging`) and the
recording internals (:mod:`analysis.claims.recording`). Import it from :mod:`analysis.claims.ledger`.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.claims.counting import count_by_role, headline, unique_claims
from analysis.claims.evidence import STABLE_AT
from analysis.claims.judging import CLAIM_METHODS, _claim_keywords, _Judging
from analysis.claims.records import PRESETS, STATUSES, Claim
from analysis.claims.stability import claim_stability
from analysis.claims.values import _check_name
from analysis.core.io import atomic_write_json
from analysis.core.validation import check_choice


class Ledger(_Judging):
    """An ordered collection of :class:`Claim` s made by one probe (or gathered for one notebook).

    ``context`` names the probe; ``preset`` (``"smoke"`` or ``"full"``) decides whether claims marked
    ``requires_full`` are evaluated.
    """

    def __init__(self, context: str, preset: str = "full", claims: Iterable[Claim] = ()):
        _check_name("context", context)
        check_choice("preset", preset, PRESETS)
        self.context = context
        self.preset = preset
        self._claims: dict[tuple[str, str], Claim] = {}
        self.extend(claims)

    # ------------------------------------------------------------------ collection

    def given(self, **defaults: Any) -> Given:
        """A view of this ledger whose claim methods take ``defaults`` (``seed``, ``figure``, ``requires_full``,
        ``source``, ...) for the keywords a call leaves out, each where the method takes it: a claim function opens
        with ``led = led.given(seed=SEED, figure=FIGURE)`` instead of repeating them in every call. Claims go
        into this ledger; ``ValueError`` for a keyword no claim method takes."""
        return Given(self, defaults)

    def add(self, claim: Claim) -> Claim:
        """Insert ``claim``; one with the same ``(context, name)`` is replaced in place. Deviations are
        re-resolved against the claims now present (a diagnosis may be recorded after its claim)."""
        if not isinstance(claim, Claim):
            raise ValueError(f"claim must be a Claim, got {type(claim).__name__}")
        self._claims[(claim.context, claim.name)] = claim
        self._resolve()
        return self._claims[(claim.context, claim.name)]

    def extend(self, other: Ledger | Iterable[Claim], *, tag: str | None = None) -> Ledger:
        """Add every claim of another ledger (or an iterable of claims), keeping their contexts.

        A notebook that shows several runs of a probe passes a ``tag`` per run: the claims' contexts
        become ``"<context>[<tag>]"``, so runs recording claims of the same name do not replace one
        another (and counts still count a repeated measurement once).
        """
        if tag is not None:
            _check_name("tag", tag)
        claims = other.claims if isinstance(other, Ledger) else list(other)
        for claim in claims:
            if tag is not None:
                claim = replace(claim, context=f"{claim.context}[{tag}]")
            self._claims[(claim.context, claim.name)] = claim
        self._resolve()
        return self

    @property
    def claims(self) -> list[Claim]:
        return list(self._claims.values())

    @property
    def failed(self) -> list[Claim]:
        """Every claim with status ``fail`` (findings and bugs alike)."""
        return [c for c in self._claims.values() if c.status == "fail"]

    @property
    def broken(self) -> list[Claim]:
        """Failing identities: bugs, which fail ``make figures`` and ``make test``."""
        return [c for c in self.failed if c.role == "identity"]

    @property
    def ok(self) -> bool:
        """True when no identity fails (a failing prediction or bound is a finding, not a bug)."""
        return not self.broken

    def get(self, name: str, context: str | None = None) -> Claim:
        key = (context or self.context, name)
        if key not in self._claims:
            names = [f"{c}/{n}" for c, n in self._claims]
            raise KeyError(f"no claim {key[0]}/{key[1]}; recorded: {names}")
        return self._claims[key]

    def __getitem__(self, name: str) -> Claim:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return (self.context, name) in self._claims

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self._claims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return (self.context, self.preset, self.claims) == (other.context, other.preset, other.claims)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"Ledger(context={self.context!r}, preset={self.preset!r}, {counts})"

    def unique(self) -> list[Claim]:
        """The claims with repeated measurements (same name, values and untagged context) counted once."""
        return unique_claims(self.claims)

    def summary(self) -> dict[str, int]:
        """Number of unique claims per status (every status present, zeros included)."""
        counts = dict.fromkeys(STATUSES, 0)
        for claim in self.unique():
            counts[claim.status] += 1
        return counts

    def by_role(self) -> dict[str, dict[str, int]]:
        """Unique claims counted by role, then status."""
        return count_by_role(self.claims)

    def headline(self) -> str:
        return headline(self.claims)

    def against_alternatives(self) -> Ledger:
        """A copy in which every evaluated prediction is judged against its alternative."""
        return Ledger(self.context, self.preset, [c.against_alternative() for c in self.claims])

    def rejudged(self) -> Ledger:
        """A copy whose verdicts' stability (and so their ``unstable`` status), deviations and findings are decided
        again from the stored bands by today's rules: a cached result read back reports what the ledger's
        rules say now, without recomputing its measurements."""
        claims = []
        for c in self.claims:
            if c.stability is not None:
                record = claim_stability(c)
                status = "unstable" if record["value"] < STABLE_AT else record["verdict"]
                c = replace(c, stability=record, status=status, finding=None)
            claims.append(c)
        return Ledger(self.context, self.preset, claims)

    def report(self) -> str:
        """Multi-line text: the headline, then one line per claim."""
        lines = [f"{self.context} ({self.preset}): {len(self.unique())} claims: {self.headline()}"]
        lines += ["  " + c.line() for c in self.claims]
        return "\n".join(lines)

    # ------------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "preset": self.preset,
            "summary": self.summary(),
            "by_role": self.by_role(),
            "claims": [c.to_dict() for c in self.claims],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ledger:
        for key in ("context", "preset", "claims"):
            if key not in d:
                raise ValueError(f"ledger dict is missing {key!r}; needs context, preset, claims")
        return cls(d["context"], d["preset"], [Claim.from_dict(c) for c in d["claims"]])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the ledger as JSON, atomically."""
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Ledger:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))


class Given:
    """:meth:`Ledger.given`: the ledger's claim methods with default keywords; everything else is the ledger's."""

    def __init__(self, ledger: Ledger, defaults: Mapping[str, Any]):
        unknown = sorted(set(defaults) - set().union(*map(_claim_keywords, CLAIM_METHODS)))
        if unknown:
            raise ValueError(f"given: {', '.join(unknown)} is not a keyword of any claim method {CLAIM_METHODS}")
        self.ledger = ledger.ledger if isinstance(ledger, Given) else ledger
        self.defaults = {**(ledger.defaults if isinstance(ledger, Given) else {}), **defaults}

    def given(self, **defaults: Any) -> Given:
        return Given(self, defaults)

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self.ledger, attr)
        if attr not in CLAIM_METHODS:
            return target
        takes = _claim_keywords(attr)
        fill = {k: v for k, v in self.defaults.items() if k in takes}
        return functools.wraps(target)(lambda *args, **kw: target(*args, **{**fill, **kw}))

    def __getitem__(self, name: str) -> Claim:
        return self.ledger[name]

    def __contains__(self, name: object) -> bool:
        return name in self.ledger

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.ledger)

    def __len__(self) -> int:
        return len(self.ledger)


def collect(context: str, preset: str, parts: Mapping[str | None, Ledger | Iterable[Claim]]) -> Ledger:
    """One ledger gathering probe ledgers for a notebook: ``parts`` maps a tag (``None`` for untagged)
    to a probe's ledger (or its result's ``.ledger``). Notebooks save this; they make no claims."""
    led = Ledger(context, preset=preset)
    for tag, part in parts.items():
        part = getattr(part, "ledger", part)
        led.extend(part, tag=tag)
    return led
