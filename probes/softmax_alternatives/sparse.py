"""Part ``sparse`` (seeds 000#29 and 004#5): a random attention layer with a planted key, under sparsemax and
softmax; how often sparsemax gives the planted key weight exactly 1 as the number of keys grows, against the exact
probability, and the mass softmax leaves on the irrelevant keys, against its exact law and its growth with n."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, predict_law, predict_law_and_slope
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from analysis.zoo.model import TinyTransformer
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import PATTERN, SCORES, head_pattern_and_scores, random_head
from probes.softmax_alternatives.references import SEED_IRRELEVANT, SEED_SPARSE, SOURCE

DESCRIPTION = "a planted key among n random ones: sparsemax's exact isolation against its probability, and softmax"
FIELDS = ("sparse_keys", "sparse_gap", "sparse_d_model", "sparse_batch_size", "sparse_rows", "sparse_seeds")
GATE = "sparse"

KERNELS = ("sparsemax", "softmax")
FIGURE = "sa_sparse_isolation"


def sparse_model(config: Config, kernel: str, seed: int) -> TinyTransformer:
    """The random layer of width ``sparse_d_model`` (:func:`models.random_head`) with attention ``kernel``."""
    return random_head(config.sparse.d_model, kernel, seed)


def planted_bias(n: int, gap: float) -> torch.Tensor:
    """(n + 1, n + 1) logit bias: ``-inf`` on the diagonal (no token sees itself) and ``+gap`` on key 0 (the planted
    key) for every other row, so each row ``i >= 1`` sees ``n`` keys, one planted."""
    bias = torch.zeros(n + 1, n + 1, dtype=torch.float64)
    bias[1:, 0] = gap
    bias.fill_diagonal_(float("-inf"))
    return bias


def row_logit_std(model: TinyTransformer, x: torch.Tensor) -> torch.Tensor:
    """(B, T) the std ``s_i = c |W_k^T q_i|`` of row i's logits ``c q_i . k_j`` over Gaussian keys ``x_j ~ N(0, I)``:
    given the weights and the query, each distractor's logit is N(0, s_i^2) exactly."""
    attn = model.blocks[0].attn
    with torch.no_grad():
        q = attn.W_q(x)  # (B, T, d)
        return model.config.scale * (q @ attn.W_k.weight).norm(dim=-1)


def _rows(model: TinyTransformer, x: torch.Tensor, bias: torch.Tensor) -> dict[str, torch.Tensor]:
    """The one head's pattern and logits, rows ``i >= 1`` ((B, n, n + 1) each), of ``model`` on ``x``."""
    return {name: t[:, 1:] for name, t in head_pattern_and_scores(model, x, bias).items()}


def measure_keys(config: Config, n: int, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed`` at ``n`` keys: per row ``i >= 1`` of ``sparse_batch_size`` sequences of ``n + 1`` Gaussian tokens,
    whether sparsemax isolates the planted key (every other weight exactly 0), softmax's planted weight, the row's
    logit std and the zoo's sparsemax against the float64 reference (largest absolute difference, in units of
    ``n max|z|``)."""
    g = torch.Generator().manual_seed(derived_seed(seed, f"sparse_inputs_n{n}"))
    x = torch.randn(config.sparse.batch_size, n + 1, config.sparse.d_model, generator=g, dtype=torch.float64)
    bias = planted_bias(n, config.sparse.gap)
    weights = derived_seed(seed, "sparse_weights") % MAX_SEED  # one layer per seed, shared by both kernels
    out: dict[str, np.ndarray] = {}
    for kernel in KERNELS:
        model = sparse_model(config, kernel, weights)
        got = _rows(model, x, bias)
        p = got[PATTERN]
        if kernel == "sparsemax":
            out["isolated"] = ((p[..., 0] > 0) & (p[..., 1:] == 0).all(-1)).double().numpy()
            z = got[SCORES].numpy()
            scale = n * float(np.abs(z[np.isfinite(z)]).max())  # n terms of size <= max|z| in each cumulative sum
            out["reference_error"] = np.array(float(np.abs(th.sparsemax(z) - p.numpy()).max()) / scale)
            out["std"] = row_logit_std(model, x)[:, 1:].numpy()
        else:
            out["softmax_weight"] = p[..., 0].numpy()
            rows = min(config.sparse.rows, n)  # the first rows of each sequence (all rows are alike)
            planted = got[SCORES][:, :rows, 0].numpy()  # each row's planted logit, its gap included
            out["irrelevant"] = p[:, :rows, 1:].sum(-1).numpy()  # the distractors' weights (own key hidden: 0)
            out["irrelevant_exact"] = th.distractor_mass(n, planted, out["std"][:, :rows])
    return out


def _measure_all(c: Config, steps) -> dict[str, np.ndarray]:
    K, S = len(c.sparse.keys), c.sparse.seeds
    iso, soft, pred, irr, irr_exact = (np.empty((K, S)) for _ in range(5))
    worst = 0.0
    for i in range(S):
        seed = replicate_seed(c.seed, i)
        for j, n in enumerate(c.sparse.keys):
            m = measure_keys(c, n, seed)
            iso[j, i] = m["isolated"].mean()
            soft[j, i] = m["softmax_weight"].mean()
            pred[j, i] = th.sparsemax_isolation(n, c.sparse.gap, m["std"]).mean()
            irr[j, i], irr_exact[j, i] = m["irrelevant"].mean(), m["irrelevant_exact"].mean()
            worst = max(worst, float(m["reference_error"]))
            steps.update()
    return {"iso": iso, "soft": soft, "pred": pred, "irr": irr, "irr_exact": irr_exact, "worst": np.array(worst)}


def measure(ctx: Context) -> None:
    c = ctx.config
    with bar(total=len(c.sparse.keys) * c.sparse.seeds, progress=ctx.progress, desc="planted keys") as steps:
        m = _measure_all(c, steps)
    dims = ("keys", "sparse_seed")
    ctx.data["sparse_isolated"] = (dims, m["iso"])
    ctx.data["sparse_isolation_theory"] = (dims, m["pred"])
    ctx.data["softmax_planted_weight"] = (dims, m["soft"])
    ctx.data["softmax_irrelevant_mass"] = (dims, m["irr"])
    ctx.data["softmax_irrelevant_mass_exact"] = (dims, m["irr_exact"])
    ctx.coords.update(keys=list(c.sparse.keys), sparse_seed=list(range(c.sparse.seeds)))
    ctx.scalars["sparsemax_reference_error"] = float(m["worst"])


def claim_sparsemax_kernel(led: Ledger, r: Result) -> None:
    """The zoo's sparsemax pattern is the simplex projection of its logits (float64 reference by sorting)."""
    led.judge(
        "sparsemax_kernel_is_simplex_projection",
        measured=r.scalars["sparsemax_reference_error"],
        expected=0.0,
        atol=2 * float(np.finfo(np.float64).eps),
        why="the same sorted cumulative sums in two libraries: each sum of <= n terms of size <= max|z| rounds by "
        "<= n eps max|z|, and the threshold tau and so every weight carries that (x2: both sides)",
        statement="the zoo's sparsemax attention equals the float64 reference projection on every measured row (in "
        "units of n max|z|)",
    )


def claim_isolation(led: Ledger, r: Result) -> None:
    """000#29: sparse attention can give the relevant key all the weight; with random distractors only as long as it
    exceeds the largest of them by 1, so the isolation probability falls with n, exactly as derived."""
    led = led.given(seed=SEED_SPARSE, figure=FIGURE)
    d, g = r.data, r.config.sparse.gap
    law = (
        "sparsemax_isolation_vs_keys",
        1.0,
        f"distractors at their mean logit: the planted key (gap {g:g} >= 1) is isolated at every n",
        f"{SOURCE}: P(isolated) = int phi(u) Phi(u + (g - 1)/s)^(n-1) du at each row's logit std s",
    )
    subject = (
        f"sparsemax, planted gap {g:g}, n = {[int(k) for k in d['keys'].values]} keys, the fraction of rows with the "
        "planted weight exactly 1"
    )
    pairs = (d["sparse_isolated"].values, d["sparse_isolation_theory"].values)  # (keys, seed)
    predict_law(led, pairs, law, Measured(subject, "n", "isolated fraction"), paired="difference")


def claim_irrelevant_mass(led: Ledger, r: Result) -> None:
    """004#5: softmax cannot remove irrelevant information: beside the planted key every distractor keeps a positive
    weight, and their total (the irrelevant mass) is its exact law given each row's planted logit and logit std
    (the alternative 0: selective sparsity, the irrelevant keys removed), growing with the number of keys at the
    law's slope in ln n (the alternative: a length-independent share)."""
    c, d = r.config, r.data
    law = (
        "softmax_irrelevant_mass_exact",
        0.0,
        "selective sparsity: the irrelevant keys removed from the softmax, no mass left on them",
        f"{SOURCE}, sections 2 and 4: 1 - E[p_planted] = (n-1) int e^(-t e^a) psi_s(t) phi_s(t)^(n-2) dt at each "
        "row's planted logit a and logit std s",
    )
    slope = (
        "softmax_irrelevant_mass_grows_with_length",
        0.0,
        "a length-independent irrelevant share",
        f"{SOURCE}, section 4: the law's slope in ln n (-> 1 while the planted key dominates: (n - 1) e^(s^2/2 - a))",
    )
    subject = (
        f"softmax, planted gap {c.sparse.gap:g}, n = {list(c.sparse.keys)} keys (random layer, width "
        f"{c.sparse.d_model}), the irrelevant mass 1 - p_planted (the first {c.sparse.rows} rows of each sequence)"
    )
    pairs = (d["softmax_irrelevant_mass"].values, d["softmax_irrelevant_mass_exact"].values)  # (n, seed)
    what = Measured(subject, "n", "irrelevant mass")
    predict_law_and_slope(led, pairs, c.sparse.keys, law, slope, what, seed=SEED_IRRELEVANT, figure=FIGURE)


claims = each_claim(claim_sparsemax_kernel, claim_isolation, claim_irrelevant_mass)
