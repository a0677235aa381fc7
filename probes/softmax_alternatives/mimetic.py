"""Part ``mimetic`` (seed 000#115): a random attention layer with mimetic initialisation (``W_q^T W_k = alpha Z +
beta I``): each token's weight on itself against the exact quadrature, the mean-field formula and a random product."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, measure_replicates
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from analysis.zoo.model import TinyTransformer
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import PATTERN, head_pattern_and_scores, random_head, row_logits

DESCRIPTION = "mimetic init (W_q^T W_k = alpha Z + beta I): each token's weight on itself against the exact law"
FIELDS = ("mimetic_betas", "mimetic_alpha", "mimetic_d_model", "mimetic_tokens", "mimetic_batch_size", "mimetic_seeds")
GATE = "mimetic"

FIGURE = "sa_mimetic"


def mimetic_model(config: Config, beta: float, seed: int) -> TinyTransformer:
    """The random softmax layer of width ``mimetic_d_model`` with the zoo's ``init="mimetic"``, ``W_q^T W_k = alpha Z
    + beta I`` (``alpha = mimetic_alpha``); ``W_o W_v`` keeps the zoo's default mimetic pair."""
    return random_head(
        config.mimetic.d_model, "softmax", seed, init="mimetic", mimetic_qk=(config.mimetic.alpha, float(beta))
    )


NAMES = (
    "mimetic_self_weight",
    "mimetic_self_weight_exact",
    "mimetic_self_weight_mean_field",
    "mimetic_self_weight_random_product",
)


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per beta, the mean over rows of the measured self weight, of its exact expectation given each
    row's ``(a_i, s_i)``, of the mean-field value ``1/(1 + (n - 1) e^{s_i^2/2 - a_i})`` and of the exact value with
    the self logit of a random product (``a_i = 0``)."""
    n = config.mimetic.tokens
    g = torch.Generator().manual_seed(derived_seed(seed, "mimetic_inputs"))
    x = torch.randn(config.mimetic.batch_size, n, config.mimetic.d_model, generator=g, dtype=torch.float64)
    weights = derived_seed(seed, "mimetic_weights") % MAX_SEED  # one Z per seed, shared by every beta
    out = {k: np.empty(len(config.mimetic.betas)) for k in NAMES}
    for j, beta in enumerate(config.mimetic.betas):
        model = mimetic_model(config, beta, weights)
        p = head_pattern_and_scores(model, x)[PATTERN].diagonal(dim1=-2, dim2=-1).numpy()  # (B, n)
        a, s = row_logits(model, x)
        out["mimetic_self_weight"][j] = p.mean()
        out["mimetic_self_weight_exact"][j] = th.mimetic_self_weight(n, a, s).mean()
        out["mimetic_self_weight_mean_field"][j] = th.mimetic_self_weight_jensen(n, a, s).mean()
        out["mimetic_self_weight_random_product"][j] = th.mimetic_self_weight(n, np.zeros_like(a), s).mean()
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "mimetic", ("mimetic_beta", c.mimetic.betas), lambda s: measure_layer(c, s))


def claim_self_weight(led: Ledger, r: Result) -> None:
    """000#115: with ``W_q^T W_k`` near beta I every token attends to itself with the derived weight: the exact law,
    above the mean-field formula (Jensen's gap), far above a random product's."""
    d, c = r.data, r.config
    exact = d["mimetic_self_weight_exact"]
    ratio = (d["mimetic_self_weight"] / exact).values  # (beta, seed)
    alt = (d["mimetic_self_weight_mean_field"] / exact).values
    led.judge(
        "mimetic_self_weight",
        replicates=ratio.mean(axis=0),
        expected=1.0,
        alternative=float(alt.mean()),
        why=f"95% t band over {c.mimetic.seeds} independent layers (replicate seeds) of each one's mean over beta of "
        "the measured mean self weight over its exact expectation (paired: each row's own logits); the 1 is the "
        "ratio's definition",
        statement=f"mimetic init (alpha {c.mimetic.alpha:g}, beta {list(c.mimetic.betas)}), n = {c.mimetic.tokens} "
        f"Gaussian tokens: the mean weight of a token on itself is the exact law (mean {float(exact.mean()):.3f}), "
        "not the mean-field formula",
    )


claims = each_claim(claim_self_weight)
