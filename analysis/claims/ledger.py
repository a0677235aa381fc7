"""The claims ledger: every comparison between a measurement and what theory (or a paper) predicts.

A probe records each check it makes in a :class:`Ledger`; the ledger is saved beside the result and
gathered into ``figures/claims.json``. Notebooks never make claims: they plot a probe's result and
save the probe's ledger (:func:`collect`).

**Roles.** Every claim says what kind of evidence it is:

* ``identity`` -- exact algebra or a software equality (a closed form against its recursion, the zoo
  against its Hugging Face copy). Tolerance is float precision with the reason. It shows the code is
  right, not that a theory holds; a failing identity is a bug (``make figures`` and ``make test`` fail).
* ``prediction`` -- a number we derive compared with a measurement. The tolerance is the
  measurement's own uncertainty under the one band policy of :mod:`analysis.claims.evidence` (a 95% Student-t
  band over independent replicates, a within-run SE only where the quantity is deterministic given the
  model, or a 95% CI), and the claim names an **alternative**: the value a competing hypothesis
  predicts. The measurement is also judged against the alternative with the same uncertainty; when it
  is consistent with both, the claim is ``inconclusive``: neither pass nor fail.
* ``bound`` -- a measured value against a proven or derived bound. ``tightness`` is measured / bound
  for an upper bound and bound / measured for a lower one (when both are positive); a bound that holds
  with tightness below :data:`LOOSE_BELOW` is ``loose``: true, but not evidence.
* ``paper`` -- a number a paper measured in another setting (a published range).

**Kinds of comparison** (float64, inclusive boundaries): ``close`` (``|m - e| <= atol + rtol |e|``),
``bound`` (``m <relation> b``), ``within`` (``lo <= m <= hi``) and ``manual`` (a qualitative verdict
the caller decided; identities and paper claims only).

**Status**, decided in this order:

1. ``requires_full=True`` under preset ``"smoke"`` -> ``not_evaluated``; so is a claim recorded with
   :meth:`Ledger.not_evaluated`.
2. A non-finite or missing measurement -> ``fail``.
3. The comparison holds -> ``pass``, except a prediction whose measurement is also consistent with
   its alternative (or whose alternative lies inside the band) -> ``inconclusive``, and a bound with
   tightness below 0.1 -> ``loose``. A predicted sign (:meth:`Ledger.direction`) whose uncertainty
   straddles the alternative is ``inconclusive`` too.
4. The comparison fails -> ``deviation`` only when the claim names, in ``diagnosed_by``, claims of
   the same ledger that measure its cause, each evaluated and with the status the diagnosis
   requires (a theorem's condition measured to fail; the same quantity passing where the paper
   measured it). Otherwise ``fail``. A reason written before the run cannot make a claim unfailable:
   if a diagnosing claim is missing, unevaluated, or comes out otherwise, the miss is a ``fail``.
5. **Stability** (every evaluated comparison but identities and manual verdicts): the fraction of
   resamples of the measurement that reach the same verdict, 0 when a perturbation at the float rounding
   scale flips it (:func:`analysis.claims.evidence.stability`). Below :data:`analysis.claims.evidence.STABLE_AT` the
   claim
   is ``unstable``: neither pass nor fail (its verdict is kept in ``stability["verdict"]``).

Every ``fail`` carries a **finding** (:func:`finding_of`): ``regime`` when a claim it names in ``regime``
(a measured hypothesis of the theorem, same ledger) fails, ``scale`` when it says how the paper's setting
is larger (``scale``), ``scope`` for a failing scope check, ``refuted`` otherwise; a failing identity is a ``bug``.

**Declarations and verdicts.** In a probe that declares its claims (:mod:`analysis.claims.specs`), every claim is
recorded as declared: its ``tests`` (paper, derivation, toy_model, software) and ``paper`` are stamped on the
record, a declared scope check is recorded with role ``scope``, and an undeclared claim is refused. Every record
then carries a **verdict** (:func:`verdict_of`): ``agrees``, ``disagrees`` (saying what it contradicts),
``undecided`` (saying what would decide it) or ``out_of_scope`` (a scope check of its run fails: exploration,
never counted against the paper). The verdict is the comparison at the one error rate (a 95% band: an
``unstable`` status is still inside or outside its band) and comes from evaluated evidence only, never from a
default. The headline (:func:`headline`) counts verdicts and states how many disagreements the 95% band alone
gives among the predictions it judged (:func:`chance_text`).

A claim is identified by ``(context, name)``: recording the same name again in the same context
replaces the earlier claim in place. Counts (:meth:`Ledger.summary`, :func:`headline`) count each
measurement once: claims of one name with the same measured and expected values under several tags
of one context are one claim.

**Where it lives.** This module is the front: the names below are imported from here. The claim record and its
vocabulary are in :mod:`analysis.claims.records` (plain-value checks in :mod:`analysis.claims.values`); the
:class:`Ledger` in :mod:`analysis.claims.collection`, its roles in :mod:`analysis.claims.predictions`, its
comparisons in :mod:`analysis.claims.comparisons`, its one call of a declared claim in
:mod:`analysis.claims.judging` and its recording internals in :mod:`analysis.claims.recording`; the bands in
:mod:`analysis.claims.bands`; status, diagnosis and findings in :mod:`analysis.claims.findings`; stability and
re-judging in :mod:`analysis.claims.stability`; verdicts and their texts in :mod:`analysis.claims.verdicts`; counts
and the headline in :mod:`analysis.claims.counting`.
"""

from analysis.claims.bands import (  # noqa: F401
    _alternative,
    _band_inputs,
    _check_coverage,
    _ci,
    _family_why,
    _looks_why,
    _population,
    _t95_band,
    _t_or_nan,
    _within_run,
)
from analysis.claims.collection import Given, Ledger, collect  # noqa: F401
from analysis.claims.comparisons import _UNSET  # noqa: F401
from analysis.claims.counting import (  # noqa: F401
    DISAGREES_WITH,
    chance_text,
    count_by_role,
    count_by_verdict,
    finding_counts,
    headline,
    unique_claims,
)
from analysis.claims.findings import _diagnosis, _status, _triage, finding_of  # noqa: F401
from analysis.claims.judging import _REQUIRED, CLAIM_METHODS, JUDGE_EVIDENCE, _claim_keywords, judged_as  # noqa: F401
from analysis.claims.records import (  # noqa: F401
    _RELATION_OPS,
    COMPARISON_OUTCOMES,
    EVALUATED,
    FAR,
    FINDINGS,
    KINDS,
    LOOSE_BELOW,
    PRESETS,
    RELATIONS,
    ROLES,
    STABILITY_METHODS,
    STATUSES,
    VERDICTS,
    Claim,
)
from analysis.claims.stability import (  # noqa: F401
    band_width,
    claim_stability,
    claim_uncertainty,
    reference_scale,
    verdict_function,
)
from analysis.claims.values import (  # noqa: F401
    _as_finite_float,
    _as_measured,
    _check_name,
    _dof_from_json,
    _dof_json,
    _finite,
    _float_from_json,
    _float_to_json,
    _fmt,
    _to_float,
)
from analysis.claims.verdicts import (  # noqa: F401
    TESTED,
    _against_text,
    _agree_text,
    attained,
    comparison_outcome,
    samples_to_decide,
    verdict_of,
    what_would_decide,
)
