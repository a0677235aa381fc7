"""Your own claim: declare it, measure it over replicate seeds, judge it and save it, outside the workbench's probes.

A theorist with a bound of their own checks it in a notebook or script of their own, with the same declarations,
evidence rules and verdicts as the workbench's claims (:mod:`analysis.claims.specs`, :mod:`analysis.claims.ledger`,
:mod:`analysis.claims.evidence`)::

    from analysis.claims.own import Study

    study = Study("softmax_rows", folder="my_results", notebook="my_bound.ipynb", params={"preset": "smoke"})
    study.paper("mine", "My derivation: the softmax Jacobian's norm is at most 2 max_i p_i (1 - p_i)")
    study.declare("row_bound", tests="derivation", comparison="bound", paper="mine",
                  statement="lambda_max(diag p - p p^T) <= 2 max_i p_i (1 - p_i) on every softmax row",
                  scope="every softmax row meets it by construction", source="Gershgorin's circle theorem")
    reps = study.replicates(measure, seeds=range(4))   # measure(seed) -> {"quantity": number or array}
    study.judge("row_bound", population=reps.pooled("ratio"), bound=1.0, why="...")
    study.save_figure(fig, "my_rows", caption="...")
    study.save()                                         # my_results/my_bound.claims.json, ... and papers.json

* :meth:`Study.paper` registers the paper your claims test (your own derivation, or a paper the workbench does not
  list) with :func:`analysis.claims.papers.register_paper`; a claim may also name any key of
  :data:`analysis.claims.papers.PAPERS`.
* :meth:`Study.declare` takes the fields of :class:`analysis.claims.specs.ClaimSpec`: what the claim tests (``"paper"``,
  ``"derivation"``, ``"toy_model"``), its comparison (a ``bound``, a ``prediction`` against an ``alternative`` its
  band must exclude, a ``sign``, a ``law``, a ``range``, or a ``scope`` check of the hypotheses), the statement, the
  paper and the scope. A missing or bad field is one ``ValueError`` naming it.
* :meth:`Study.replicates` runs ``measure(seed)`` once per independent seed (a progress bar); trained models come
  from :meth:`Study.trained` (:mod:`analysis.training.recipes`, through the checkpoint cache), whose checkpoint keys the
  study records as the provenance of everything it saves.
* :meth:`Study.judge` is :meth:`analysis.claims.ledger.Ledger.judge`: the same engine and rules as every workbench claim
  (a bound reads a population's worst case, its median tightness, and ``attained`` to float rounding; a prediction
  is judged by its 95% band over the replicates against its alternative; a run outside a scope check is out of
  scope).
* :meth:`Study.save` writes the ledger, the declarations and the per-paper scorecard of the folder;
  :meth:`Study.save_figure` writes figures with provenance naming your notebook (and its content hash), its
  parameters and the checkpoint keys. The folder is yours: the committed gallery ``figures/`` is refused.
  ``python -m probes claims --folder DIR`` lists the folder's claims, ``--folder DIR --paper KEY`` its scorecard.

When a claim of yours deserves to be checked on every ``make figures``, promote it into a probe (CONTRIBUTING.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.claims import specs
from analysis.claims.ledger import Claim, Ledger
from analysis.claims.papers import PAPERS, USER_PAPERS, Paper, register_paper
from analysis.core.io import atomic_write_json, sha256_file
from analysis.core.paths import GALLERY
from analysis.core.progress import bar
from analysis.core.provenance import check_name, check_params

__all__ = ["Replicates", "Study", "folder_claims", "folder_scorecard"]

FORMAT = 1  # bump when the layout of <notebook>.declared.json changes
DECLARED = ".declared.json"  # beside <notebook>.claims.json: the claims' declarations and the papers registered


@dataclass
class Replicates:
    """What :meth:`Study.replicates` measured: per quantity, one value (a number or an array) per seed."""

    seeds: list[int]
    values: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def __getitem__(self, quantity: str) -> np.ndarray:
        """The quantity's values stacked over seeds (first axis: the seed); arrays of one shape only."""
        vals = self._of(quantity)
        shapes = {v.shape for v in vals}
        if len(shapes) != 1:
            raise ValueError(f"{quantity!r} has different shapes per seed ({sorted(shapes)}); use pooled({quantity!r})")
        return np.stack(vals)

    def per_seed(self, quantity: str) -> np.ndarray:
        """One number per seed: the quantity itself when it is a number, else the mean of its values (NaN-aware
        only in that a NaN stays NaN). Independent replicates, as :meth:`analysis.claims.ledger.Ledger.predict`
        takes."""
        return np.array([float(np.mean(v)) for v in self._of(quantity)], dtype=np.float64)

    def pooled(self, quantity: str) -> np.ndarray:
        """Every case of every seed in one flat float64 array: the population a bound is checked on."""
        return np.concatenate([v.ravel() for v in self._of(quantity)])

    def _of(self, quantity: str) -> list[np.ndarray]:
        if quantity not in self.values:
            raise ValueError(f"quantity must be one that measure returned: {', '.join(self.values)}; got {quantity!r}")
        return self.values[quantity]


class Study:
    """One notebook's (or script's) own claims: their declarations, ledger, figures and provenance (module docstring).

    ``name`` is the claims' context (letters, digits, ``_.-``; not a workbench probe's name); ``folder`` where the
    ledger and figures go (created; never the committed ``figures/``); ``notebook`` the notebook or script that
    makes them (a path: its file name is recorded, and its content hash when the file exists); ``params`` its
    parameters, ``preset`` among them (``"smoke"`` or ``"full"``)."""

    def __init__(self, name: str, *, folder: str | os.PathLike, notebook: str | os.PathLike, params: Mapping[str, Any]):
        check_name("name", name)
        from analysis.claims.specs import registered

        probes = _workbench_probes()
        if name in probes or (name in registered() and name not in _OWN):
            raise ValueError(f"name {name!r} is a workbench probe's; choose a name of your own for your claims")
        self.params = check_params(params)
        self.name = name
        self.folder = _own_folder(folder)
        path = Path(notebook)
        self.notebook = path.stem if path.suffix in (".ipynb", ".py") else path.name
        check_name("notebook", self.notebook)
        self.inputs: dict[str, str] = {}
        if path.is_file():
            self.inputs[f"notebook {path.name}"] = sha256_file(path)
        self.ledger = Ledger(name, self.params["preset"])
        self._specs: list[specs.ClaimSpec] = []
        self._papers: set[str] = set()
        _OWN.add(name)
        specs.declare(name)

    # ------------------------------------------------------------------ declarations

    def paper(self, key: str, summary: str, name: str = "") -> Paper:
        """Register the paper (or your derivation) that claims of this study test
        (:func:`analysis.claims.papers.register_paper`)."""
        p = register_paper(key, summary, name)
        self._papers.add(p.key)
        return p

    def declare(self, name: str, **fields: Any) -> specs.ClaimSpec:
        """Declare claim ``name`` (the fields of :class:`analysis.claims.specs.ClaimSpec`; ``ValueError`` naming a
        missing or
        bad one). Declaring a name again replaces its declaration (a notebook cell run twice)."""
        unknown = sorted(set(fields) - set(specs.ClaimSpec.__dataclass_fields__) - {"name"})
        if unknown:
            allowed = ", ".join(f for f in specs.ClaimSpec.__dataclass_fields__ if f != "name")
            raise ValueError(f"claim {name!r}: {', '.join(unknown)} is not a declaration field; allowed: {allowed}")
        if fields.get("tests") == "software":
            raise ValueError(
                f"claim {name!r}: tests must be paper, derivation or toy_model (an identity of our "
                "software is a workbench test, not a claim of yours)"
            )
        spec = specs.ClaimSpec(name=name, **fields)
        if spec.looks:
            raise ValueError(
                f"claim {name!r}: looks (a sequential design) need a probe's config; give the seeds "
                "to Study.replicates instead"
            )
        kept = [s for s in self._specs if s.name != name]
        specs.declare(self.name, *kept, spec)  # refuses a scope check that is not declared
        self._specs = [*kept, spec]
        if spec.paper in USER_PAPERS:
            self._papers.add(spec.paper)
        return spec

    @property
    def specs(self) -> list[specs.ClaimSpec]:
        """The claims declared so far, in declaration order."""
        return list(self._specs)

    # ------------------------------------------------------------------ measurement

    def trained(self, recipe: str, seed: int, **kwargs: Any):
        """A trained model of a named recipe (:func:`analysis.training.recipes.trained`, through the checkpoint
        cache; the
        preset is this study's unless given), its checkpoint key recorded as an input of what the study saves."""
        from analysis.training.recipes import trained

        kwargs.setdefault("preset", self.params["preset"])
        t = trained(recipe, seed=seed, **kwargs)
        self.inputs[f"{recipe} seed {seed}"] = t.key
        return t

    def replicates(
        self, measure: Callable[[int], Any], seeds: int | Iterable[int], progress: bool = True
    ) -> Replicates:
        """``measure(seed)`` for each independent seed (``seeds``: a count, meaning 0..n-1, or the seeds); it returns a
        number or ``{quantity: number or array}``. ``ValueError`` for fewer than two seeds or a repeated seed."""
        seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
        if len(seed_list) < 2 or len(set(seed_list)) != len(seed_list) or min(seed_list) < 0:
            raise ValueError(f"seeds must be at least two distinct non-negative seeds (or a count >= 2), got {seeds!r}")
        if not callable(measure):
            raise ValueError(f"measure must be a function of the seed, got {type(measure).__name__}")
        out = Replicates(seed_list)
        for seed in bar(seed_list, progress=progress, desc=f"{self.name}: seeds", unit="seed"):
            got = measure(seed)
            got = got if isinstance(got, Mapping) else {"value": got}
            if out.values and set(got) != set(out.values):
                raise ValueError(f"measure returned {sorted(got)} at seed {seed}, but {sorted(out.values)} before")
            for q, v in got.items():
                arr = np.asarray(v.detach().cpu() if hasattr(v, "detach") else v, dtype=np.float64)
                out.values.setdefault(q, []).append(arr)
        return out

    # ------------------------------------------------------------------ judging and saving

    def judge(self, name: str, **evidence: Any) -> Claim:
        """Judge declared claim ``name`` from this run's evidence (:meth:`analysis.claims.ledger.Ledger.judge`); the
        record's
        statement is the declaration's unless the evidence words one for this run."""
        spec = next((s for s in self._specs if s.name == name), None)
        if spec is not None and "statement" not in evidence:
            evidence["statement"] = spec.statement
        return self.ledger.judge(name, **evidence)

    def save_figure(self, fig, name: str, caption: str = "") -> dict[str, Path]:
        """Write ``fig`` into the folder with provenance naming the notebook, its parameters and the checkpoint keys,
        and the claims judged with ``figure=name`` (:func:`analysis.notebook.plotting.save_figure`)."""
        from analysis.notebook.plotting import save_figure

        return save_figure(
            fig,
            name,
            notebook=self.notebook,
            params=self.params,
            ledger=self.ledger,
            inputs=self.inputs,
            caption=caption,
            out_dir=self.folder,
        )

    def save(self) -> Path:
        """Write ``<notebook>.claims.json`` (the ledger), ``<notebook>.declared.json`` (the declarations, the papers
        registered and the provenance) and ``papers.json`` (the scorecard of every ledger in the folder); return the
        folder."""
        from analysis.core.provenance import git_commit, package_versions

        self.ledger.save(self.folder / f"{self.notebook}.claims.json")
        declared = {
            "format": FORMAT,
            "context": self.name,
            "notebook": self.notebook,
            "params": self.params,
            "inputs": dict(sorted(self.inputs.items())),
            "commit": git_commit(),
            "versions": package_versions(),
            "papers": [asdict(PAPERS[k]) for k in sorted(self._papers)],
            "claims": [_spec_json(s) for s in self._specs],
        }
        atomic_write_json(self.folder / f"{self.notebook}{DECLARED}", declared)
        atomic_write_json(self.folder / "papers.json", folder_scorecard(self.folder))
        return self.folder

    def report(self) -> str:
        """One line per claim: verdict, name, and the verdict in words."""
        return "\n".join(f"{c.verdict:<13} {c.name}: {c.verdict_reason}" for c in self.ledger.claims)


_OWN: set[str] = set()  # contexts declared by a Study in this process (a notebook rerun may declare one again)


def _workbench_probes() -> set[str]:
    """The probes whose claims the committed gallery holds (their ledger contexts, without tags): names a study of
    yours must not take. (The library does not import the probes; their declarations are checked by ``registered``
    where the caller imported them.)"""
    names = set()
    for path in GALLERY.glob("*.claims.json"):
        try:
            names |= {c["context"].split("[", 1)[0] for c in json.loads(path.read_text())["claims"]}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return names


def _own_folder(folder: str | os.PathLike) -> Path:
    if not isinstance(folder, str | os.PathLike) or not str(folder).strip():
        raise ValueError(f"folder must be a path, got {folder!r}")
    path = Path(folder).expanduser().resolve()
    if path == GALLERY.resolve() or GALLERY.resolve() in path.parents:
        raise ValueError(f"folder {folder} is the workbench's committed gallery figures/; choose a folder of your own")
    if path.exists() and not path.is_dir():
        raise ValueError(f"folder {folder} is a file; give a folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _spec_json(spec: specs.ClaimSpec) -> dict[str, Any]:
    d = asdict(spec)
    d["scope"] = list(spec.scope) if isinstance(spec.scope, tuple) else spec.scope
    d["looks"] = list(spec.looks)
    d["diagnosed_by"] = dict(spec.diagnosed_by)
    return d


def _read_declared(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
        papers = [Paper(p["key"], p["summary"], tuple(p.get("aliases", ())), p.get("name", "")) for p in doc["papers"]]
        for p in papers:  # the claims name them: registered first (refused when it contradicts a registration)
            if p.key not in PAPERS or p.key in USER_PAPERS:
                register_paper(p.key, p.summary, p.name)
        claims = [specs.ClaimSpec(**{**c, "looks": tuple(c.get("looks", ()))}) for c in doc["claims"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a readable declarations file ({type(e).__name__}: {e})") from None
    return {"context": doc.get("context"), "claims": claims, "papers": papers}


def folder_claims(
    folder: str | os.PathLike, declared: Callable[[Claim], specs.ClaimSpec | None] | None = None
) -> list[tuple[str, Claim, specs.ClaimSpec | None]]:
    """``(notebook, claim, declaration)`` for every claim of every ``<notebook>.claims.json`` in ``folder``, the
    declarations read from ``<notebook>.declared.json`` (a workbench ledger's by ``declared(claim)``, default
    :func:`analysis.claims.specs.spec_for`: import the probes first, ``analysis.probing.registry.load_declarations``);
    the papers
    those files register are registered (before the claims that name them). ``ValueError`` (one line) for a folder
    that holds no ledger."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder {folder} does not exist or is not a folder")
    ledgers = sorted(root.glob("*.claims.json"))
    if not ledgers:
        raise ValueError(
            f"folder {folder} holds no <notebook>.claims.json ledger (analysis.claims.own.Study.save writes one)"
        )
    out = []
    for path in ledgers:
        notebook = path.name[: -len(".claims.json")]
        try:
            ledger = Ledger.load(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a readable claims ledger ({type(e).__name__}: {e})") from None
        declared_path = root / f"{notebook}{DECLARED}"
        lookup: dict[str, specs.ClaimSpec] = {}
        if declared_path.exists():
            doc = _read_declared(declared_path)
            lookup = {s.name: s for s in doc["claims"]}
        for c in ledger.claims:
            if declared_path.exists():
                spec = lookup.get(c.name)
            else:  # a workbench ledger: its declarations are the probes'
                spec = declared(c) if declared is not None else specs.spec_for(c.context, c.name)
            out.append((notebook, c, spec))
    return out


def folder_scorecard(
    folder: str | os.PathLike, declared: Callable[[Claim], specs.ClaimSpec | None] | None = None
) -> dict[str, Any]:
    """The per-paper scorecard (:func:`analysis.claims.scorecard.scorecard`) of every ledger in ``folder``
    (``declared``:
    as :func:`folder_claims` takes it)."""
    from analysis.claims import scorecard

    rows = folder_claims(folder, declared)
    specs_of = {(c.context, c.name): s for _, c, s in rows}
    where = {(c.context, c.name): nb for nb, c, _ in rows}
    doc = scorecard.scorecard([c for _, c, _ in rows], lambda c: specs_of.get((c.context, c.name)), where)
    return doc | {"folder": str(Path(folder))}
