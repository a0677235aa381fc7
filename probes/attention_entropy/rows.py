"""Part ``rows``: every row's entropy, largest weight and logit range at initialisation against the context length, the
range and spectral bounds, and the logit-scale sweep: softmax's dilution."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import attention_entropy as th
from analysis.zoo.model import TinyTransformer
from probes.attention_entropy.config import Config
from probes.attention_entropy.models import MeasuredModel, distinct_tokens, model_config
from probes.attention_entropy.shared import (
    FLOAT32_ROW,
    FLOAT64_ROW,
    at_n,
    entropy_at_n,
    fade_rate_numbers,
    gaussian_exact,
    measure_rows,
    spectral_bound_rows,
    worst_ratio,
)

DESCRIPTION = (
    "every row's entropy, largest weight and logit range at initialisation against n; the bounds; the scale sweep"
)
FIELDS = ("ctx_lens", "rows_per_n", "data", "scale_factors", "replicates")


@dataclass(frozen=True)
class RowsPerN:
    """The measured model's rows at each context length (:func:`measure_untrained`), for the Gaussian part."""

    per_n: dict[str, np.ndarray]


PROVIDES = (RowsPerN,)


def measure_untrained(
    model, tokens: torch.Tensor, ns, k: int, *, normalised: bool, causal: bool, progress: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, float]]:
    """Per-n values (L, H, N), the rows of the longest pass (L, H, T) and row-wise bound slacks.

    Causal: one pass; per n the ``k`` rows ending at n. Bidirectional: one pass on the first n tokens per
    n; per n all n rows (each sees n keys). Slacks (min over every row of every pass, float64):
    ``H - ln(1 + (n-1) e^{-R})`` and ``e^M/(e^M + (n-1) e^{-M}) - max p`` (``M`` = the row's max |logit|),
    over rows with n >= 2 (a row with one key is the equality case).
    """
    nan_rows = None
    per_n: dict[str, list] = {"entropy": [], "max_weight": [], "std": [], "max_weight_bound": []}
    slack = {"range": math.inf, "max_weight": math.inf, "absmax": 0.0, "range_tight": 0.0, "max_weight_tight": 0.0}

    def account(r: dict[str, np.ndarray]) -> None:
        slack["absmax"] = max(slack["absmax"], float(r["absmax"].max()))
        if normalised:
            many = r["n"] >= 2  # a single key is the equality case of both bounds (slack 0), left out
            rb = th.entropy_lower_bound_range(r["n"], r["range"])
            slack["range"] = min(slack["range"], float(np.min((r["entropy"] - rb)[many])))
            slack["range_tight"] = max(slack["range_tight"], worst_ratio(rb[many], r["entropy"][many]))
            mb = th.max_weight_bound(r["n"], r["absmax"])
            slack["max_weight"] = min(slack["max_weight"], float(np.min((mb - r["max_weight"])[many])))
            slack["max_weight_tight"] = max(slack["max_weight_tight"], worst_ratio(r["max_weight"][many], mb[many]))

    if causal:
        rows = measure_rows(model, tokens, normalised=normalised)
        account(rows)
        nan_rows = np.full(rows["std"].shape[:2] + (len(ns),), np.nan)
        out = {"std": at_n(rows["std"], ns, k)}
        if normalised:
            out["entropy"] = entropy_at_n(rows["entropy"], ns, k)
            out["max_weight"] = at_n(rows["max_weight"], ns, k)
            out["max_weight_bound"] = at_n(th.max_weight_bound(rows["n"], rows["absmax"]), ns, k)
    else:
        for n in bar(ns, progress=progress, desc="context lengths", leave=False):
            rows = measure_rows(model, tokens[:, : int(n)], normalised=normalised)
            account(rows)
            per_n["std"].append(rows["std"].mean(-1))
            if normalised:
                per_n["entropy"].append(rows["entropy"].mean(-1))
                per_n["max_weight"].append(rows["max_weight"].mean(-1))
                per_n["max_weight_bound"].append(th.max_weight_bound(rows["n"], rows["absmax"]).mean(-1))
        out = {key: np.stack(v, axis=-1) for key, v in per_n.items() if v}
        nan_rows = np.full(out["std"].shape, np.nan)
    for key in ("entropy", "max_weight", "max_weight_bound"):
        out.setdefault(key, nan_rows)
    return out, rows, slack


def measure_sweep(config: Config, progress: bool = False) -> dict[str, np.ndarray]:
    """Logit-scale sweep at ``n = sweep_len``: entropy and logit std (scale_factor, replicate, layer, head), the
    two Gaussian laws at layer 0's measured std, and the dilution-bound slack/tightness over every row."""
    n_, k = config.sweep_len, config.rows_per_n
    dh = config.model.d_model // config.model.n_heads
    shape = (len(config.scale_factors), config.replicates, config.model.n_layers, config.model.n_heads)
    out = {key: np.full(shape, np.nan) for key in ("ent", "std")}
    slack, tight = math.inf, 0.0
    grid = [(a, f, r) for a, f in enumerate(config.scale_factors) for r in range(config.replicates)]
    for a, f, r in bar(grid, progress=progress, desc="scale sweep", leave=False):
        seed = replicate_seed(config.seed, r)  # the replicate models' seeds
        mcfg = model_config(config, vocab=n_, logit_scale=f / math.sqrt(dh), seed=seed)
        m = TinyTransformer(mcfg, device=config.torch_device()).eval()
        rows = measure_rows(m, distinct_tokens(n_, seed), normalised=True)
        out["ent"][a, r] = entropy_at_n(rows["entropy"], [n_], k)[..., 0]
        out["std"][a, r] = rows["std"][..., n_ - k : n_].mean(-1)
        mb = th.max_weight_bound(rows["n"], rows["absmax"])
        many = rows["n"] >= 2
        slack = min(slack, float(np.min((mb - rows["max_weight"])[many])))
        tight = max(tight, worst_ratio(rows["max_weight"][many], mb[many]))
    out["lln"] = th.lln_entropy(n_, out["std"][:, :, 0])  # layer 0: its keys are i.i.d. by construction
    out["exact"] = gaussian_exact(n_, out["std"][:, :, 0])
    out["slack"], out["tight"] = slack, tight
    return out


def row_arrays(ns: np.ndarray, per_n: dict, rows: dict, normalised: bool) -> dict:
    """The arrays of the untrained measurement (per n, per row) with their theory: ``{name: (dims, values)}``."""
    ent, std = per_n["entropy"], per_n["std"]
    nan_rows = np.full(rows["std"].shape, np.nan)
    # theory at the measured logit std (attention kernel softmax: ssmax rescales the logits by s ln n
    # before hook_attn_scores, so its measured std already includes the factor)
    data = {
        "entropy": (("layer", "head", "n"), ent),
        "entropy_norm": (("layer", "head", "n"), ent / np.log(ns)),
        "max_weight": (("layer", "head", "n"), per_n["max_weight"]),
        "logit_std": (("layer", "head", "n"), std),
        "max_weight_bound": (("layer", "head", "n"), per_n["max_weight_bound"]),
        "theory_entropy": (("layer", "head", "n"), gaussian_exact(ns, std)),
        "theory_entropy_lln": (("layer", "head", "n"), th.lln_entropy(ns, std)),
        "entropy_rows": (("layer", "head", "row"), rows["entropy"] if normalised else nan_rows),
        "max_weight_rows": (("layer", "head", "row"), rows["max_weight"] if normalised else nan_rows),
        "logit_absmax_rows": (("layer", "head", "row"), rows["absmax"]),
        "logit_range_rows": (("layer", "head", "row"), rows["range"]),
        "range_bound_rows": (("layer", "head", "row"), th.entropy_lower_bound_range(rows["n"], rows["range"])),
    }
    return data


def measure(ctx: Context) -> None:
    """The rows of the measured model per context length, the spectral bound per row, and (own softmax or SSMax
    models) the logit-scale sweep; the slack of every bound as scalars. Puts the :class:`RowsPerN` for the
    Gaussian part."""
    config, m = ctx.config, ctx.get(MeasuredModel)
    ns, normalised = m.ns, m.normalised
    per_n, rows, slack = measure_untrained(
        m.net, m.tokens, ns, config.rows_per_n, normalised=normalised, causal=m.causal, progress=ctx.progress
    )
    ctx.put(RowsPerN(per_n))
    L, H = rows["std"].shape[:2]
    spec = spectral_bound_rows(m.net, m.tokens[:, : rows["n"].shape[-1]], causal=m.causal)
    if spec is not None and normalised:
        many = rows["n"] >= 2
        slack["spectral"] = float(np.min((rows["entropy"] - spec)[many]))
        slack["spectral_tight"] = worst_ratio(spec[many], rows["entropy"][many])
    sweep = measure_sweep(config, progress=ctx.progress) if ctx.own_model and normalised else None
    if sweep is not None:
        slack["sweep_max_weight"], slack["sweep_max_weight_tight"] = sweep["slack"], sweep["tight"]
    ctx.data.update(row_arrays(ns, per_n, rows, normalised))
    if spec is not None:
        ctx.data["spectral_bound_rows"] = (("layer", "head", "row"), spec)
    if sweep is not None:
        dims = ("scale_factor", "replicate", "layer", "head")
        ctx.data["sweep_entropy"], ctx.data["sweep_logit_std"] = (dims, sweep["ent"]), (dims, sweep["std"])
        ctx.data["sweep_theory_exact_layer0"] = (("scale_factor", "replicate", "head"), sweep["exact"])
        ctx.data["sweep_theory_lln_layer0"] = (("scale_factor", "replicate", "head"), sweep["lln"])
    ctx.coords.update(
        layer=np.arange(L),
        head=np.arange(H),
        n=ns,
        row=np.arange(1, rows["std"].shape[-1] + 1),
        scale_factor=np.asarray(config.scale_factors),
        replicate=np.arange(config.replicates),
    )
    ctx.scalars.update(max_abs_logit=slack["absmax"], causal=m.causal, data=config.data)
    if normalised:  # the row bounds are about normalised weights (sigmoid attention keeps only logits)
        ctx.scalars.update({f"slack_{key}": float(v) for key, v in slack.items() if key != "absmax"})


def claim_softmax_dilution_rate(led: Ledger, r: Result) -> None:
    """Softmax dilution (000#6): a key with a fixed logit gap g keeps weight e^g/(e^g + n - 1) ~ e^g / n."""
    scalars, config = r.scalars, r.config
    led.judge(
        "softmax_fade_rate",
        band=fade_rate_numbers(scalars["softmax_fade_rate"], scalars["softmax_fade_rate_lower_half"]),
        expected=-1.0,
        alternative=0.0,
        why="se = drift of the fitted slope between the two half-decades below planted_max_n (as for SSMax); "
        "within-run band: 95% normal multiple (1.96, dof inf) of the drift",
        statement=f"softmax: fitted d ln w / d ln n at n ~ {config.planted.max_n} = -1 (dilution)",
    )


def claim_range_bounds(led: Ledger, r: Result) -> None:
    """H >= ln(1 + (n-1) e^{-R}) on every row (R: the row's logit range), and the spectral form of R (Zhai et al.)."""
    scalars = r.scalars
    if "slack_range" not in scalars:
        return
    for name, key, tol, why, statement in (
        (
            "range_bound_holds",
            "range",
            FLOAT64_ROW,
            "exact inequality on the same float64 logits, slack for rounding; tightness = the largest bound / H over "
            "rows (measured is the smallest H - bound)",
            "every row (n >= 2): H - ln(1 + (n-1) e^{-range}) >= 0",
        ),
        (
            "spectral_bound_holds",
            "spectral",
            FLOAT32_ROW,
            "exact inequality; slack for float32 logits (relative 1e-6 of |logit| <= ~10); tightness = the largest "
            "bound / H over rows",
            "every row: H >= ln(1 + (n-1) exp(-2 c ||W_q^T W_k|| |x_i| max|x_j|))",
        ),
    ):
        if f"slack_{key}" in scalars:  # the spectral slack: only where its bound applies
            led.judge(
                name,
                measured=scalars[f"slack_{key}"],
                bound=-tol,
                tightness=scalars[f"slack_{key}_tight"],
                why=why,
                statement=statement,
            )


def claim_dilution_bound(led: Ledger, r: Result) -> None:
    """max p <= e^M / (e^M + (n-1) e^{-M}) for logits in [-M, M] (the max weight fades like e^{2M}/n; 000#6)."""
    scalars = r.scalars
    if "slack_max_weight" not in scalars:
        return
    led.judge(
        "max_weight_bound_holds",
        measured=scalars["slack_max_weight"],
        bound=-FLOAT64_ROW,
        tightness=scalars["slack_max_weight_tight"],
        why="exact inequality on the same float64 logits, M = the row's measured max |logit|; slack for "
        "rounding; tightness = the largest max p / bound over rows",
        statement="every row of the measured model: e^M/(e^M + (n-1)e^{-M}) - max weight >= 0",
    )
    if "slack_sweep_max_weight" in scalars:
        led.judge(
            "max_weight_bound_holds_sweep",
            measured=scalars["slack_sweep_max_weight"],
            bound=-FLOAT64_ROW,
            tightness=scalars["slack_sweep_max_weight_tight"],
            why="as max_weight_bound_holds, on every row of every model of the logit-scale sweep",
            statement="every row, every logit scale: the dilution bound at the row's measured max |logit|",
        )


claims = each_claim(claim_softmax_dilution_rate, claim_range_bounds, claim_dilution_bound)
