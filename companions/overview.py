"""The experiment of ``00_overview``: an untrained ``TinyTransformer``'s exact identities and its residual RMS.

A notebook companion, not a probe (:func:`analysis.probing.registry.companion_modules`): the overview notebook builds
its design with :func:`setup` (the model and tokens its parameters and preset give, :data:`DESIGN`), calls the
functions below, plots what they measured and saves their ledgers. Each function measures one thing and
records the claims about it in a :class:`Ledger` of context :data:`CONTEXT`; it returns a :class:`Measured`
(the arrays and the ledger).

* :func:`uniform_attention` -- with zero logits, attention weights are 1/(t+1) on the causal support and
  the head output is the running mean of the values (two identities, worst layer each);
* :func:`residual_rms` -- the residual-stream RMS after each block, Pre-LN and Post-LN, over several
  initialisations: Post-LN's per-token RMS equals LayerNorm's closed form (identity) and Pre-LN's grows
  with depth (a direction, its 95% t band over the independent initialisations). Initialisation ``i`` has
  the seed :func:`analysis.claims.evidence.replicate_seed` ``(base.seed, i)`` (:func:`init_seeds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.claims.evidence import replicate_seeds
from analysis.claims.ledger import Ledger
from analysis.claims.specs import ClaimSpec, declare
from analysis.core.validation import check_choice, check_int
from analysis.zoo.hooks import resid_names, run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer

DECLARED = declare(
    "overview",
    ClaimSpec(
        name="uniform_pattern",
        tests="software",
        comparison="identity",
        statement="Softmax of all-zero logits on the causal support: every uniform-attention weight equals "
        "1/(t+1) on the t+1 visible keys and 0 off them.",
        quantity="worst |A (t+1) - 1| over layers, in units of one row weight",
        source="derivation: softmax of zero logits on the causal support",
    ),
    ClaimSpec(
        name="uniform_running_mean",
        tests="software",
        comparison="identity",
        statement="Uniform attention's head output is the causal running mean of the values, "
        "z_t = (1/(t+1)) sum_{j<=t} v_j.",
        quantity="worst |z - running mean| over layers, in units of (t+1) max|v|",
        source="derivation: z_t = (1/(t+1)) sum_{j<=t} v_j",
    ),
    ClaimSpec(
        name="post_ln_block_rms",
        tests="software",
        comparison="identity",
        statement="LayerNorm algebra (unit gain, zero bias): the per-token RMS of a Post-LN block output equals "
        "sqrt(var/(var + eps)) of its input.",
        quantity="max per-token |RMS(y) - sqrt(var/(var + eps))| (dimensionless)",
        source="derivation: LayerNorm with unit gain, zero bias",
        figure="overview_residual_rms",
    ),
    ClaimSpec(
        name="pre_ln_rms_grows",
        tests="paper",
        comparison="sign",
        paper="000#12",
        statement="BHyT: under Pre-LN, «As layers grow, the magnitude and variance of the hidden state escalate, "
        "destabilizing training».",
        scope="by construction an untrained Pre-LN zoo stack, each block adding an un-normalised branch to the "
        "stream; the paper states the escalation for Pre-LN LLMs in training, the run checks it at initialisation "
        "only (the setting of Xiong et al., 000#4)",
        quantity="final / embedding residual-stream RMS ratio (dimensionless)",
        source="Xiong et al. 2020 (Pre-LN hidden-state norm grows with depth at initialisation); seed "
        "000#12 (hidden-state magnitude escalates with depth under Pre-LN)",
        hypothesis="no growth: the residual stream keeps the embedding's RMS, as a normalised (Post-LN) stream does",
        sign=1,
        figure="overview_residual_rms",
    ),
)

CONTEXT = "overview"
EPS = float(torch.finfo(torch.float64).eps)  # float64 machine epsilon
# per preset: initialisations averaged (residual RMS), and the random tokens' batch size and length
DESIGN = {"smoke": {"n_inits": 4, "batch": 4, "seq_len": 16}, "full": {"n_inits": 8, "batch": 8, "seq_len": 64}}


@dataclass(frozen=True)
class Setup:
    """The overview's design: the float64 base model (its norm and seed replaced per run), the input tokens
    ``(batch, seq_len)`` and the number of independent initialisations."""

    preset: str
    base: ModelConfig
    tokens: torch.Tensor
    n_inits: int

    def model_configs(self) -> list[dict[str, Any]]:
        """The configs of every residual-RMS model (Pre-LN, then Post-LN; each initialisation): a figure's inputs."""
        return [
            self.base.replace(norm=n, seed=s).to_dict()
            for n in ("pre", "post")
            for s in init_seeds(self.base, self.n_inits)
        ]


def setup(
    preset: str = "full", seed: int = 0, n_layers: int = 6, d_model: int = 64, n_heads: int = 4, vocab_size: int = 64
) -> Setup:
    """The design the notebook's parameters give (``ValueError`` naming a bad one): a token-input model without
    read-out in float64 whose weights have ``seed``, and random tokens drawn with ``seed``."""
    check_choice("preset", preset, tuple(DESIGN))
    check_int("seed", seed, minimum=0)
    for name, value in (("n_layers", n_layers), ("d_model", d_model), ("n_heads", n_heads), ("vocab_size", vocab_size)):
        check_int(name, value, minimum=1)
    design = DESIGN[preset]
    base = ModelConfig(
        input="tokens",
        vocab_size=vocab_size,
        output="none",
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        dtype="float64",
        seed=seed,
    )
    shape = (design["batch"], design["seq_len"])
    tokens = torch.randint(0, vocab_size, shape, generator=torch.Generator().manual_seed(seed))  # (B, T)
    return Setup(preset, base, tokens, design["n_inits"])


@dataclass(frozen=True)
class Measured:
    """What one function measured (``data``: named arrays and numbers) and the claims it recorded."""

    data: dict[str, Any]
    ledger: Ledger


def init_seeds(base: ModelConfig, n_inits: int) -> list[int]:
    """Weight seeds of the ``n_inits`` independent initialisations: ``base.seed`` itself, then
    :func:`analysis.claims.evidence.replicate_seed` ``(base.seed, i)`` (runs with different seeds share none)."""
    return replicate_seeds(base.seed, n_inits)


def uniform_attention(base: ModelConfig, tokens: torch.Tensor, preset: str) -> Measured:
    """Uniform attention (all logits zero) is a causal running mean: weights 1/(t+1), output mean of v.

    Both are exact up to float64 rounding; one identity each, measured at the worst layer.
    """
    model = TinyTransformer(base.replace(attention="uniform"))
    _, cache = run_with_cache(
        model, tokens, names=["blocks.*.attn.hook_pattern", "blocks.*.attn.hook_v", "blocks.*.attn.hook_z"]
    )
    T = tokens.shape[1]
    t1 = torch.arange(1, T + 1, dtype=torch.float64)  # t + 1 = number of visible keys
    expected = torch.ones(T, T, dtype=torch.float64).tril() / t1[:, None]  # (T, T)
    pattern_dev, mean_dev = [], []
    for layer in range(base.n_layers):
        A = cache[f"blocks.{layer}.attn.hook_pattern"]  # (B, H, T, T)
        v = cache[f"blocks.{layer}.attn.hook_v"]  # (B, T, H, dh)
        z = cache[f"blocks.{layer}.attn.hook_z"]  # (B, T, H, dh)
        # |A (t+1) - 1| on the support, |A| (t+1) off it: in units of one row weight
        pattern_dev.append(((A - expected).abs() * t1[:, None]).max().item())
        running_mean = v.cumsum(dim=1) / t1[None, :, None, None]  # (B, T, H, dh)
        # per position, in units of (t+1) max|v|: the scale of the summation error bound
        mean_dev.append(((z - running_mean).abs() / (t1[None, :, None, None] * v.abs().max())).max().item())
    led = Ledger(CONTEXT, preset=preset)
    for name, dev, atol, why, statement in (
        (
            "uniform_pattern",
            pattern_dev,
            2 * EPS,
            "e^0 = 1 and t + 1 are exact: one rounded reciprocal or quotient per weight, <= 2 eps relative",
            "uniform attention weights equal 1/(t+1) on the causal support (worst of {L} layers, in units of one "
            "weight)",
        ),
        (
            "uniform_running_mean",
            mean_dev,
            4 * EPS,
            "sums of t+1 terms on both sides err by <= (t+1) eps max|v| each; x2 for the division",
            "uniform-attention output equals the causal running mean of the values (worst of {L} layers, in units "
            "of (t+1) max|v|)",
        ),
    ):
        led.judge(
            name,
            measured=max(dev),
            expected=0.0,
            atol=atol,
            why=why,
            statement=statement.format(L=base.n_layers),
        )
    return Measured({"pattern_dev": np.array(pattern_dev), "mean_dev": np.array(mean_dev)}, led)


def measure_residual_rms(base: ModelConfig, tokens: torch.Tensor, n_inits: int) -> dict[str, Any]:
    """RMS of the residual stream after the embedding and each block, per norm and initialisation.

    Returns ``{"pre", "post"}`` -> (n_inits, n_layers + 1) arrays, and ``post_dev``: the largest per-token
    deviation |RMS(y) - sqrt(var/(var + eps))| of a Post-LN block output y = LayerNorm(h) (h its input).
    """
    L = base.n_layers
    out: dict[str, Any] = {"post_dev": 0.0}
    for norm in ("pre", "post"):
        runs = []
        for seed in init_seeds(base, n_inits):
            cfg = base.replace(norm=norm, seed=seed)
            names = resid_names(L, "depth") + (["blocks.*.ln2.hook_in"] if norm == "post" else [])
            _, c = run_with_cache(TinyTransformer(cfg), tokens, names=names)
            streams = [c[name] for name in resid_names(L, "depth")]
            runs.append([x.pow(2).mean().sqrt().item() for x in streams])
            if norm == "post":
                for l, post in enumerate(resid_names(L)):
                    h, y = c[f"blocks.{l}.ln2.hook_in"], c[post]  # (B, T, d)
                    var = h.var(dim=-1, unbiased=False)  # (B, T)
                    rms_dev = y.pow(2).mean(dim=-1).sqrt() - (var / (var + cfg.norm_eps)).sqrt()  # (B, T)
                    out["post_dev"] = max(out["post_dev"], rms_dev.abs().max().item())
        out[norm] = np.array(runs)  # (n_inits, L + 1)
    return out


def post_ln_rms_claim(led: Ledger, data: dict[str, Any], d_model: int) -> None:
    """LayerNorm algebra: a Post-LN block output (unit gain, zero bias) has RMS sqrt(var/(var + eps))."""
    led.judge(
        "post_ln_block_rms",
        measured=data["post_dev"],
        expected=0.0,
        atol=2 * d_model * EPS,
        why="the norm's variance and our mean of squares each sum d terms: <= d eps relative error each",
        statement="Post-LN: per-token RMS of every block output equals sqrt(var/(var + eps)) of its input",
    )


def pre_ln_growth_claim(led: Ledger, data: dict[str, Any]) -> None:
    """Pre-LN: every block adds a branch to an un-normalised stream, so its RMS grows with depth.

    Measured: the final / embedding RMS ratio, averaged over independent initialisations; its uncertainty is
    their spread (the 95% Student-t band over replicates). Alternative: ratio 1, a stream that keeps its scale.
    """
    ratio = data["pre"][:, -1] / data["pre"][:, 0]  # (n_inits,)
    n = len(ratio)
    led.judge(
        "pre_ln_rms_grows",
        replicates=ratio,
        alternative=1.0,
        why=f"95% t band over {n} independent initialisations (replicate seeds of the weights; the same tokens)",
        statement="Pre-LN: final / embedding residual RMS exceeds 1 beyond its spread over initialisations",
    )


def residual_rms(base: ModelConfig, tokens: torch.Tensor, n_inits: int, preset: str) -> Measured:
    """Residual RMS across depth for Pre-LN and Post-LN, with the Post-LN identity and Pre-LN growth."""
    data = measure_residual_rms(base, tokens, n_inits)
    led = Ledger(CONTEXT, preset=preset)
    post_ln_rms_claim(led, data, base.d_model)
    pre_ln_growth_claim(led, data)
    return Measured(data, led)
