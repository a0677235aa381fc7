"""Activation, gradient and Jacobian statistics across depth for every norm placement; rank collapse.

For each norm placement and depth the probe builds ``n_samples`` TinyTransformers (weight seed of
initialisation ``i``: :func:`analysis.evidence.replicate_seed` ``(seed, i)``, ``seed`` itself for ``i = 0``;
trained on a Markov language through the checkpoint cache when ``trained``) and measures, in float64, on
Markov-language token batches:

* ``resid_var`` / ``resid_rms``: second moment per coordinate ``mean(x^2)`` (= variance: the
  coordinates have mean zero over the weight draw) and its square root, after the embedding
  (``pos = 0``) and after every block; ``post_ln_moment``: after a block that ends in a plain LayerNorm
  (post placement), the exact value of that second moment, ``mean_t sigma_t^2 / (sigma_t^2 + eps)`` from the
  norm's input (NaN elsewhere);
* ``branch_ratio``: mean over tokens of ``|F(x)| / |x|`` for the attention and MLP sublayers;
* ``grad_norm``: Frobenius norm of the gradient of every weight matrix (``W_q .. W_out``) per layer
  under the LM cross-entropy of the batch (next-token targets);
* ``angular_distance``: ``arccos(cos(x_{l-1,t}, x_{l,t})) / pi`` between consecutive streams;
* ``jacobian_identity_gap``: ``|J_l - I|_F / sqrt(d)`` with ``J_l = d x_{l,t} / d x_{l-1,t}`` the
  block's Jacobian at the last position ``t = T - 1`` (other positions held fixed). It is computed
  **exactly**: every block's input is made a separate autograd leaf by a hook, so one backward pass
  per output coordinate (``d`` of them, ``d <= 64``) gives row ``i`` of every block's Jacobian at
  once. At this width the exact matrix costs less than a Hutchinson estimate of useful accuracy
  and has no sampling error, which the comparison with ``m_l^{-1/2}`` needs; ``jacobian_norm`` is the same
  Jacobian's spectral norm ``|J_l|_2`` (its product over the blocks above a sublayer bounds how much that
  sublayer's update can grow on its way to ``x_L``: one piece of the Post-LN update decomposition);
* ``token_cosine`` (mean pairwise cosine of distinct tokens) and ``rank_residual`` (Dong et al.'s
  ``|X - 1 mean(X)|_{1,inf} / |X|_{1,inf}``) per stream position;
* ``attn_moment``: the attention branch's conditional second moment ``a_l`` (theory section 3),
  from the measured pattern and the attention input, for the Pre-LN sum rule.

Separately (at initialisation only), ``update_size``: DeepNorm's model update (theory section 10),
``|x_L(theta + dtheta) - x_L(theta)| / |x_L(theta)|`` of the final stream after one SGD or Adam step on
the fixed loss, for Pre-LN, Post-LN and DeepNorm at every depth, with its pieces per sublayer
(``update_step`` = ``|dtheta_i|``, ``update_effect`` = the relative change of ``x_L`` when only sublayer ``i``
moves; :func:`update_pieces`); and rank collapse at depth ``collapse_depth`` for pure attention
(no skip, MLP or norm) and for variants that add a LayerNorm after each attention (no skip), skips,
MLPs, Pre-LN or 1/sqrt(L) branch scaling,
under causal and full masks. The theory is :mod:`analysis.theory.signal_propagation`.

* ``mlp_moment`` (no norm only): ``mean_t G(q_mid,t)``, the MLP's conditional second moment
  (theory section 8), for the no-norm sum rule and its exponential growth.

With ``phase=True`` the run also measures the **attention phase diagram** at initialisation (Giorlandino & Goldt
2026): embedded tokens of pairwise cosine ``p`` through the theory's post-LN block at inverse temperatures
``beta``, against the random-energy model's finite-T laws (:mod:`probes._signal_phase`,
:mod:`analysis.theory.attention_phase`).

A **passed model** (``run(config, model)``; any token :class:`analysis.protocol.ProbeModel`, causal or
bidirectional, e.g. the Hugging Face adapter) is measured alone with the same statistics on Markov ids
within its vocabulary or on corpus text in its own tokenizer (``data``); see :func:`run_model`.

**Claims** are small functions, one per theorem or paper (:data:`CLAIMS`), that read only the result
Dataset and the config. Every claim depends on random (initialised or trained) weights, so a prediction's
band is the 95% Student-t band over the independent initialisations (:mod:`analysis.evidence`): of the
per-seed values of its measurement (a mean, a paired difference, a slope fitted to each seed's own curve),
never a within-run SE of one model or of a curve averaged over seeds; it names the value a competing
hypothesis predicts.

Model-specific access is limited to hook names and ``named_parameters`` names
(``blocks.{l}.attn.W_q.weight`` ..., or any path with a layer index after ``layers``/``layer``/``h``/``blocks``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr
from scipy import stats

from analysis import protocol
from analysis.corpus import build_corpus
from analysis.devices import model_device
from analysis.evidence import mean_se, replicate_seed
from analysis.hooks import hooks, resid_names, run_with_cache
from analysis.ledger import Ledger
from analysis.model import ATTENTION_KERNELS, ModelConfig, TinyTransformer
from analysis.progress import bar
from analysis.tasks import MarkovLanguage
from analysis.theory import signal_propagation as th
from analysis.train import TrainConfig, train
from probes import _signal_phase as phase
from probes.base import ModelIncompatibleError, ProbeConfig, Result, model_param, param
from probes.studies import Study

NAME = "signal_propagation"
DESCRIPTION = "Residual variance, gradients, block Jacobians and rank collapse across depth for every norm placement."
# VERSION history: 9: post_ln_moment (the exact second moment after a post-LN block) and post_variance_unit
# against it (the 1e-3 band assumed token variances >> eps; failed at d_model = 2); 8: post_variance_unit claimed
# with skip connections only; corpus data with any vocab_size; 7: jacobian_norm (block Jacobian spectral norms)
# 10: trained runs add DeepNet stability at depth (Post-LN vs DeepNorm, no warm-up) and the Curse of Depth's
# trained variance growth and layer ablations (Pre-LN vs LayerNorm scaling)
# 11: the one band policy (95% t over per-seed values; slopes fitted per seed, not to the seed mean), replicate
# seeds hashed from (seed, i) instead of seed + i, exact Jacobians and curse measurements of 5 seeds (were 2, 3)
VERSION = "11"
REQUIRES = {"input": "tokens"}  # a passed model (causal or not) is measured alone; None -> the zoo sweep

# norm variant -> ModelConfig overrides
NORM_VARIANTS: dict[str, dict] = {
    "pre": {"norm": "pre"},
    "post": {"norm": "post"},
    "peri": {"norm": "peri"},
    "mix": {"norm": "mix"},
    "none": {"norm": "none"},
    "ln_scaling": {"norm": "pre", "ln_scaling": True},
    "deepnorm": {"norm": "post", "deepnorm": True},
    "qk_norm": {"norm": "pre", "qk_norm": True},
}
PRE_LIKE = ("pre", "ln_scaling", "qk_norm")  # every block normalises its branch inputs and nothing else
PARAMS = ("W_q", "W_k", "W_v", "W_o", "W_in", "W_out")
SUBLAYERS = ("attn", "mlp")
# rank-collapse variants: name -> ModelConfig overrides (branch_scale None -> 1/sqrt(L))
COLLAPSE_VARIANTS: dict[str, dict] = {
    "pure_attention": {"norm": "none", "d_mlp": 0, "attn_residual": False},
    "attention_ln": {"norm": "post", "d_mlp": 0, "attn_residual": False},  # x_{l+1} = LN(Attn(x_l))
    "attention_mlp": {"norm": "none", "attn_residual": False, "mlp_residual": False},
    "skip": {"norm": "none", "d_mlp": 0},
    "skip_scaled": {"norm": "none", "d_mlp": 0, "branch_scale": None},
    "pre_ln": {"norm": "pre"},
}
MASKS = ("causal", "full")
# DeepNorm's model update (theory section 10): norms compared, optimiser -> learning rate. The rates keep
# the step in the linear regime where the Theorem's first-order bound applies: dividing them by 10
# divides Post-LN's update by 10 to within 0.5% up to L = 48 (ten times larger rates do not: deep
# Post-LN leaves the linear regime first).
UPDATE_NORMS = ("pre", "post", "deepnorm")
UPDATE_LR = {"sgd": 1e-5, "adam": 1e-6}
# initialisations per (norm, depth) of the update measurement (deterministic given the weights, so its spread is
# the seeds'); 3, not 5: compute (about 60 s per seed for the 3 norms x 7 depths x 2 optimisers, one thread)
UPDATE_SAMPLES = 3
DATA = ("markov", "corpus")
_PARAM_RE = re.compile(r"^blocks\.(\d+)\.(?:attn|mlp)\.(W_\w+)\.weight$")
LAYER_SEGMENTS = ("layers", "layer", "h", "blocks")  # parameter-path segments followed by the layer index
HIDDEN_LOSS_WIDTH = 16  # k: width of the fixed random projection of the hidden-state loss

JACOBIAN_SEQUENCES = 2  # sequences whose last position's block Jacobians are computed (d backward passes each)
# initialisations with Jacobians (the costliest statistic: about 12 s per seed for 8 norms x 7 depths); NaN for the
# others
JACOBIAN_SAMPLES = 5
JACOBIAN_BATCHES = 2  # a passed model (run_model): data batches with Jacobians (d backward passes each, d up to 1e3)


@dataclass(frozen=True)
class Config(ProbeConfig):
    PRESETS = {
        "smoke": {
            "norms": ("pre", "post", "peri"),
            "depths": (1, 2, 4),
            "n_samples": 2,
            "seq_len": 8,
            "batch_size": 4,
            "collapse_depth": 5,
            "train_steps": 20,
            "stability_depth": 4,
            "stability_steps": 10,
            "stability_seeds": 2,
            "curse_seeds": 2,
        },
        "full": {},
    }

    norms: tuple[str, ...] = param(tuple(NORM_VARIANTS), "norm variants to measure", choices=tuple(NORM_VARIANTS))
    depths: tuple[int, ...] = param((1, 2, 4, 8, 16, 32, 48), "numbers of blocks L", minimum=1, maximum=256)
    d_model: int = model_param("d_model", 32, maximum=128)
    heads: int = model_param("heads", 4)
    mlp: bool = param(True, "blocks have a GELU MLP of width 4 d")
    attention: str = model_param("attention", "softmax", choices=ATTENTION_KERNELS)
    skip: bool = param(True, "skip connections around both sublayers")
    mask: str = param("causal", "attention mask of the depth sweep", choices=MASKS)
    seq_len: int = param(16, "tokens per sequence T", minimum=2)
    data: str = param(
        "markov",
        "token batches: Markov-language ids, or chunks of the corpus validation text "
        "(needs a tokenizer or a byte-level vocabulary)",
        choices=DATA,
    )
    batch_size: int = param(8, "sequences per measurement batch", minimum=1)
    n_samples: int = param(
        6, "initialisations (weight seeds replicate_seed(seed, i), i < n_samples) per (norm, depth)", minimum=2
    )
    vocab_size: int = model_param(
        "vocab_size",
        64,
        "vocabulary of the Markov language (data corpus: the zoo's models embed at least the 256 byte ids)",
    )
    trained: bool = param(False, "measure after training on the Markov language (cached)")
    train_steps: int = param(300, "optimiser updates when trained", minimum=1)
    jacobian: bool = param(True, "exact block Jacobians (d backward passes per batch; the costliest statistic)")
    collapse_depth: int = param(12, "depth of the rank-collapse sweep (at initialisation)", minimum=2)
    stability_depth: int = param(
        48, "trained runs: depth of the Post-LN / DeepNorm stability runs (no warm-up)", minimum=2, maximum=256
    )
    stability_steps: int = param(150, "trained runs: optimiser updates of each stability run", minimum=2)
    stability_seeds: int = param(
        5,
        "trained runs: weight seeds (replicate_seed(seed, i)) of the stability runs (about 37 s per seed for a "
        "Post-LN and a DeepNorm run; at 3 seeds the failed-fraction claim's band exceeds its range)",
        minimum=2,
    )
    curse_seeds: int = param(
        5,
        "trained runs: weight seeds (replicate_seed(seed, i)) of the Pre-LN / LayerNorm-scaling models whose "
        "variance profile and layer ablations are measured at the deepest depth (the first n_samples are the "
        "sweep's own checkpoints)",
        minimum=2,
    )
    seed: int = model_param(
        "seed",
        0,
        "weight seed of the first initialisation (replicate 0; the others are hashed from it); also "
        "seeds the Markov language and the token batches",
    )
    # the attention phase diagram (probes._signal_phase); None: the preset's design (_signal_phase.DESIGN)
    phase: bool = param(
        False,
        "also measure the attention phase diagram at initialisation (embedded tokens of cosine p, post-LN, "
        "ReLU MLP, one head, logits beta sqrt(ln T) q.k / sqrt(d_h)): entropy, participation and token cosine",
        omit_at_default=True,
    )
    phase_betas: tuple[float, ...] | None = param(
        None, "phase: inverse temperatures beta (None: the preset's)", minimum=0.0, maximum=50.0, omit_at_default=True
    )
    phase_cosines: tuple[float, ...] | None = param(
        None, "phase: pairwise token cosines p (None: the preset's)", minimum=0.0, maximum=0.99, omit_at_default=True
    )
    phase_tokens: int | None = param(
        None, "phase: tokens per sequence T (None: the preset's)", minimum=2, maximum=2048, omit_at_default=True
    )
    phase_width: int | None = param(
        None, "phase: model width d, >= T + 1 (None: the preset's)", minimum=3, maximum=4096, omit_at_default=True
    )
    phase_depth: int | None = param(
        None, "phase: post-LN blocks (None: the preset's)", minimum=1, maximum=64, omit_at_default=True
    )
    phase_seeds: int | None = param(
        None, "phase: independent seeds (weights and tokens; None: the preset's)", minimum=2, omit_at_default=True
    )

    def validate(self) -> None:
        super().validate()
        if len(set(self.norms)) != len(self.norms):
            raise ValueError(f"norms must not repeat, got {list(self.norms)}")
        if len(set(self.depths)) != len(self.depths):
            raise ValueError(f"depths must not repeat, got {list(self.depths)}")
        if self.data == "corpus" and self.trained:
            raise ValueError("data='corpus' needs trained=false (the zoo's models train on the Markov language)")
        if self.phase and self.trained:
            raise ValueError("phase needs trained=false (the phase diagram is measured at initialisation)")
        phase.check_design(self)


# ================================================================================================
# models and data
# ================================================================================================


def model_config(cfg: Config, norm: str, depth: int, seed: int) -> ModelConfig:
    """The float64 TinyTransformer of one (norm variant, depth, weight seed): the model fields, the mask, MLP
    and skip switches, the norm variant's fields."""
    return cfg.model_config(
        input="tokens",
        vocab_size=model_vocab(cfg),
        output="lm",
        n_layers=depth,
        d_mlp=None if cfg.mlp else 0,
        causal=cfg.mask == "causal",
        attn_residual=cfg.skip,
        mlp_residual=cfg.skip,
        dtype="float64",
        seed=seed,
        **NORM_VARIANTS[norm],
    )


def model_vocab(cfg: Config) -> int:
    """Vocabulary of the zoo's LM models: the Markov language's; with ``data="corpus"`` at least 256, so that
    the corpus text is encoded as UTF-8 bytes (:func:`analysis.protocol.encode_text`)."""
    return max(cfg.vocab_size, 256) if cfg.data == "corpus" else cfg.vocab_size


@functools.lru_cache(maxsize=2)  # a V = 4096 language holds 128 MB of transition matrix
def language(vocab_size: int, seq_len: int, seed: int) -> MarkovLanguage:
    """The Markov language, built once per process for each (vocabulary, length, seed): it is immutable and
    samples only from the generator it is given, and building one (a Dirichlet draw of V x V and its
    primitivity check) takes about 40 s at V = 4096, which every batch of a passed model used to repeat."""
    return MarkovLanguage(vocab_size=vocab_size, seq_len=seq_len, seed=seed)


def task(cfg: Config) -> MarkovLanguage:
    return language(cfg.vocab_size, cfg.seq_len, cfg.seed)


def train_config(cfg: Config):
    return TrainConfig(
        steps=cfg.train_steps,
        batch_size=32,
        lr=3e-3,
        warmup_steps=min(30, cfg.train_steps),
        weight_decay=0.0,
        seed=cfg.seed,
    )


def build(cfg: Config, norm: str, depth: int, seed: int, progress: bool = False) -> TinyTransformer:
    mcfg = model_config(cfg, norm, depth, seed)
    if not cfg.trained:
        return TinyTransformer(mcfg, device=cfg.torch_device())
    return train(mcfg, task(cfg), train_config(cfg), device=cfg.torch_device(), progress=progress).model


def batch(cfg: Config, sample: int, vocab: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) (B, T) Markov sequences for sample ``sample``: the same for every norm and depth.
    The generator seed ``seed * 1_000_003 + sample + 17`` never repeats across runs of different seeds (for
    ``sample < 1_000_003``), so replicates of two runs share no batch as they share no weights.

    ``vocab`` (a passed model's vocabulary) caps the Markov language at ``min(vocab_size, vocab)`` ids.
    """
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + sample + 17)
    if vocab is None or vocab >= cfg.vocab_size:
        return task(cfg).sample(cfg.batch_size, gen)
    return language(vocab, cfg.seq_len, cfg.seed).sample(cfg.batch_size, gen)


def corpus_batches(cfg: Config, model) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n_samples`` (inputs, targets) (B, T) batches of consecutive, non-overlapping chunks of the corpus
    validation text, encoded with the model's own tokenizer (UTF-8 bytes for byte-level zoo models)."""
    corpus = build_corpus()
    val = corpus.val_tokens
    need = cfg.n_samples * cfg.batch_size * (cfg.seq_len + 1)  # ids: each chunk carries its next token
    n_chars = min(val.size, 8 * need)
    while True:
        ids = protocol.encode_text(model, corpus.decode(val[:n_chars])).long().reshape(-1)
        if ids.numel() >= need or n_chars >= val.size:
            break
        n_chars = min(val.size, 2 * n_chars)
    if ids.numel() < need:
        raise ValueError(
            f"the corpus validation text gives {ids.numel()} tokens, fewer than n_samples * batch_size * "
            f"(seq_len + 1) = {need}; lower n_samples, batch_size or seq_len"
        )
    chunks = ids[:need].view(cfg.n_samples, cfg.batch_size, cfg.seq_len + 1)  # (S, B, T + 1)
    return [(c[:, :-1].contiguous(), c[:, 1:].contiguous()) for c in chunks]


# ================================================================================================
# measurements of one model
# ================================================================================================


def fixed_loss(out: torch.Tensor, targets: torch.Tensor, vocab: int | None, seed: int) -> tuple[torch.Tensor, str]:
    """The fixed loss whose gradients are measured, and its kind.

    A model whose output's last axis is its vocabulary returns logits: the loss is the mean next-token
    cross-entropy. Otherwise (an encoder returning hidden states ``h`` (B, T, d)) it is the mean squared
    error of a fixed random projection against a fixed random target, ``mean((h P - Y)^2)`` with
    ``P`` (d, k) ~ N(0, 1/d) and ``Y`` (B, T, k) ~ N(0, 1), ``k = HIDDEN_LOSS_WIDTH``, drawn from
    ``seed``: deterministic, defined for any width, and sensitive to every hidden coordinate.
    """
    if vocab is not None and out.shape[-1] == vocab:
        ce = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        return ce, "next_token_cross_entropy"
    B, T, d = out.shape
    gen = torch.Generator().manual_seed(seed * 7919 + 3)
    P = torch.randn(d, HIDDEN_LOSS_WIDTH, generator=gen, dtype=torch.float64) / math.sqrt(d)
    Y = torch.randn(B, T, HIDDEN_LOSS_WIDTH, generator=gen, dtype=torch.float64)
    return (out @ P.to(out.device, out.dtype) - Y.to(out.device, out.dtype)).pow(2).mean(), "hidden_projection_mse"


def layer_index(name: str) -> int | None:
    """The layer of a parameter path: the first integer segment right after a segment named
    ``layers``/``layer``/``h``/``blocks`` (``encoder.layer.3.attention...`` -> 3); None outside layers."""
    parts = name.split(".")
    for a, b in zip(parts[:-1], parts[1:], strict=True):
        if a in LAYER_SEGMENTS and b.isdigit():
            return int(b)
    return None


def param_names(model) -> tuple[str, ...]:
    """Gradient columns for a model: our weight matrices when its parameters carry our names, else one
    ``total`` column (the Frobenius norm of all of a layer's parameters' gradients together)."""
    return PARAMS if any(_PARAM_RE.match(n) for n, _ in model.named_parameters()) else ("total",)


def layer_grad_norms(model, L: int) -> np.ndarray:
    """(L, len(param_names)) gradient norms per layer after a backward pass (NaN where no gradient)."""
    cols = param_names(model)
    grads = np.full((L, len(cols)), np.nan)
    if cols == PARAMS:
        for pname, p in model.named_parameters():
            m = _PARAM_RE.match(pname)
            if m and m.group(2) in PARAMS and p.grad is not None:
                grads[int(m.group(1)), PARAMS.index(m.group(2))] = p.grad.norm().item()
        return grads
    sq = np.zeros(L)
    seen = np.zeros(L, dtype=bool)
    for pname, p in model.named_parameters():
        l = layer_index(pname)
        if l is not None and l < L and p.grad is not None:
            sq[l] += p.grad.double().pow(2).sum().item()
            seen[l] = True
    grads[seen, 0] = np.sqrt(sq[seen])
    return grads


def _post_norm_inputs(model, L: int) -> dict[int, tuple[str, float]]:
    """Zoo blocks with post placement whose output is a plain LayerNorm (unit gain, zero bias at init):
    block -> (the hook_in name of that norm, its eps). The norm's output has per-token second moment
    ``sigma_t^2 / (sigma_t^2 + eps)`` exactly, ``sigma_t^2`` the input's variance over the width."""
    out = {}
    for l, block in enumerate(getattr(model, "blocks", [])[:L]):
        if getattr(block, "placement", None) != "post":
            continue
        ln = "ln2" if getattr(block, "mlp", None) is not None else "ln1"
        norm = getattr(block, ln, None)
        if norm is not None and norm.kind == "layernorm" and norm.out_scale == 1.0:
            out[l] = (f"blocks.{l}.{ln}.hook_in", float(norm.eps))
    return out


def measure(
    model,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    mlp: bool,
    pre_like: bool,
    jacobian: bool = True,
    no_norm: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Every per-layer statistic of one model on one batch (see the module docstring).

    Only hook points the model has are asked for; a statistic whose hooks are missing is NaN.
    ``pre_like`` / ``no_norm`` (zoo sweep only) add the attention moment ``a_l`` (input: the norm's
    output, resp. the raw stream) and, for ``no_norm``, the MLP moment (theory section 8).
    """
    L = model.n_layers
    inputs, targets = inputs.to(model_device(model)), targets.to(model_device(model))
    have = set(model.hook_names())
    first = resid_names(L, "depth")[0]  # the input of block 0; a model without it: the embedding
    first = first if first in have else "hook_embed"
    want = [first] + resid_names(L, "pre") + resid_names(L, "post") + resid_names(L, "mid")
    want += [f"blocks.{l}.{h}" for l in range(L) for h in ("hook_attn_out", "hook_mlp_out")]
    if pre_like:
        want += [f"blocks.{l}.{h}" for l in range(L) for h in ("attn.hook_pattern", "ln1.hook_normalized")]
    if no_norm:
        want += [f"blocks.{l}.attn.hook_pattern" for l in range(L)]
    post_in = _post_norm_inputs(model, L)  # block -> (hook_in of the LayerNorm that ends it, eps)
    want += [name for name, _ in post_in.values()]
    names = [n for n in dict.fromkeys(want) if n in have]
    model.zero_grad(set_to_none=True)
    out, c = run_with_cache(model, inputs, names=names)
    loss, _ = fixed_loss(out, targets, protocol.vocab_size(model), seed)
    loss.backward()

    streams = [c[first]] + [c[name] for name in resid_names(L)]  # (B, T, d) each
    out_: dict[str, np.ndarray] = {}
    out_["resid_var"] = np.array([x.double().pow(2).mean().item() for x in streams])
    out_["resid_rms"] = np.sqrt(out_["resid_var"])
    out_["post_ln_moment"] = np.full(L + 1, np.nan)  # exact mean(x^2) after a block that ends in a LayerNorm
    for l, (name, eps) in post_in.items():
        if name in c:
            var = c[name].double().var(-1, unbiased=False)  # per token, over the width
            out_["post_ln_moment"][l + 1] = (var / (var + eps)).mean().item()
    out_["resid_rms_min"] = np.array([x.double().pow(2).mean(-1).sqrt().min().item() for x in streams])
    out_["token_cosine"] = np.array([th.mean_token_cosine(x).mean().item() for x in streams])
    out_["rank_residual"] = np.array([th.rank_residual(x).mean().item() for x in streams])
    out_["angular_distance"] = np.array(
        [th.angular_distance(streams[l], streams[l + 1]).mean().item() for l in range(L)]
    )

    def ratio(branch: str, base: torch.Tensor) -> float:
        return (c[branch].double().norm(dim=-1) / base.double().norm(dim=-1)).mean().item()

    branch = np.full((L, 2), np.nan)
    mlp_moment = np.full(L, np.nan)
    for l in range(L):
        if f"blocks.{l}.hook_attn_out" in c:
            branch[l, 0] = ratio(f"blocks.{l}.hook_attn_out", streams[l])
        if mlp and f"blocks.{l}.hook_mlp_out" in c:
            # the MLP's input stream; a model without hook_resid_mid: the block's input instead
            mid = c.get(resid_names(L, "mid")[l], streams[l])
            branch[l, 1] = ratio(f"blocks.{l}.hook_mlp_out", mid)
            if no_norm:
                q_mid = mid.double().pow(2).mean(-1)  # (B, T) per-token second moment
                mlp_moment[l] = float(th.no_norm_mlp_moment(q_mid.cpu().numpy()).mean())
    out_["branch_ratio"] = branch
    out_["mlp_moment"] = mlp_moment
    attn = np.full(L, np.nan)
    for l in range(L):
        src = f"blocks.{l}.ln1.hook_normalized" if pre_like else resid_names(L, "pre")[l]
        if (pre_like or no_norm) and {f"blocks.{l}.attn.hook_pattern", src} <= set(c):
            a = th.attention_branch_moment(c[f"blocks.{l}.attn.hook_pattern"], c[src])
            attn[l] = a.mean().item()
    out_["attn_moment"] = attn
    out_["grad_norm"] = layer_grad_norms(model, L)
    model.zero_grad(set_to_none=True)
    out_["loss"] = np.array(loss.item())
    out_["jacobian_identity_gap"], out_["jacobian_norm"] = (
        block_jacobians(model, inputs[:JACOBIAN_SEQUENCES]) if jacobian else (np.full(L, np.nan), np.full(L, np.nan))
    )
    return out_


def jacobian_identity_gaps(model, inputs: torch.Tensor) -> np.ndarray:
    """``|J_l - I|_F / sqrt(d)`` per block at the last position, mean over the batch (exact Jacobians)."""
    return block_jacobians(model, inputs)[0]


def block_jacobians(model, inputs: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per block at the last position, mean over the batch (exact Jacobians): ``|J_l - I|_F / sqrt(d)``
    and the spectral norm ``|J_l|_2`` (the most a perturbation of the block's input can grow through it).

    A hook makes every block's input a fresh leaf, so block ``l``'s output depends on its own leaf
    only; backward from ``sum_l sum_b x_{l, b, T-1, i}`` then yields row ``i`` of all blocks' Jacobians.
    NaN when the model lacks the hooks or its hooks cannot replace the stream.
    """
    L = model.n_layers
    nan = (np.full(L, np.nan), np.full(L, np.nan))
    have = set(model.hook_names())
    if not set(resid_names(L, "pre") + resid_names(L, "post")) <= have:
        return nan
    leaves: list[torch.Tensor] = []

    def detach(x: torch.Tensor, name: str) -> torch.Tensor:
        leaf = x.detach().requires_grad_(True)
        leaves.append(leaf)
        return leaf

    outs: dict[str, torch.Tensor] = {}
    with torch.enable_grad(), hooks(model, [("blocks.*.hook_resid_pre", detach)]):
        _, outs = run_with_cache(model, inputs, names="blocks.*.hook_resid_post", detach=False)
    posts = torch.stack([outs[name][:, -1] for name in resid_names(L)])  # (L, B, d)
    L_, B, d = posts.shape
    if len(leaves) != L or not posts.requires_grad:
        return nan
    J = torch.empty(L, B, d, d, dtype=torch.float64)
    for i in range(d):
        try:
            rows = torch.autograd.grad(posts[:, :, i].sum(), leaves, retain_graph=i < d - 1, allow_unused=True)
        except RuntimeError:  # the replaced stream is not what the blocks read
            return nan
        if any(r is None for r in rows):
            return nan
        for l in range(L):
            J[l, :, i, :] = rows[l][:, -1]  # (B, d): d x_{l,T-1,i} / d x_{l-1,T-1,:}
    eye = torch.eye(d, dtype=torch.float64)
    gap = ((J - eye).pow(2).sum((-1, -2)).sqrt() / math.sqrt(d)).mean(1).numpy()  # (L,)
    return gap, torch.linalg.matrix_norm(J, ord=2).mean(1).numpy()


def update_size(cfg: Config, norm: str, depth: int, sample: int, optimiser: str) -> float:
    """Relative change of the final residual stream after one optimiser step from initialisation
    (:func:`update_pieces` without the per-sublayer decomposition)."""
    return update_pieces(cfg, norm, depth, sample, optimiser, pieces=False)[0]


def update_pieces(
    cfg: Config, norm: str, depth: int, sample: int, optimiser: str, pieces: bool = True
) -> tuple[float, np.ndarray, np.ndarray]:
    """One optimiser step from initialisation: the model update and its decomposition per sublayer.

    One step of SGD or Adam (learning rate ``UPDATE_LR[optimiser]``) on :func:`fixed_loss` of the
    sample's batch, moving only the sublayers' weight matrices (``W_q .. W_out``): the parameters of
    Wang et al.'s Theorem, which holds the LayerNorm gains fixed (theory section 10). Returns
    ``(u, step, effect)``: ``u = |x_L(theta + dtheta) - x_L(theta)|_F / |x_L(theta)|_F`` on the same
    batch (float64, deterministic); ``step[l, j] = |dtheta_{l,j}|_F`` over the matrices of sublayer ``j``
    (attention, MLP) of block ``l``; ``effect[l, j]`` the relative change of ``x_L`` when only that
    sublayer moves (the Theorem's terms: ``effect / step`` is the output's sensitivity along the step).
    The Theorem bounds ``u <= sum effect``. NaN arrays when ``pieces`` is False.
    """
    model = TinyTransformer(model_config(cfg, norm, depth, replicate_seed(cfg.seed, sample)), device=cfg.torch_device())
    inputs, targets = (t.to(model_device(model)) for t in batch(cfg, sample))
    name = resid_names(depth)[-1]

    def final() -> torch.Tensor:
        with torch.no_grad():
            return run_with_cache(model, inputs, names=[name])[1][name].double()

    x0 = final()
    named = [(n, p) for n, p in model.named_parameters() if _PARAM_RE.match(n)]
    params = [p for _, p in named]
    before = [p.detach().clone() for p in params]
    lr = UPDATE_LR[optimiser]
    opt = torch.optim.SGD(params, lr=lr) if optimiser == "sgd" else torch.optim.Adam(params, lr=lr)
    opt.zero_grad(set_to_none=True)
    loss, _ = fixed_loss(model(inputs), targets, model_vocab(cfg), cfg.seed)
    loss.backward()
    opt.step()
    after = [p.detach().clone() for p in params]
    u = float((final() - x0).norm() / x0.norm())
    step, effect = np.full((depth, 2), np.nan), np.full((depth, 2), np.nan)
    if not pieces:
        return u, step, effect
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (n, _) in enumerate(named):
        layer, sub = int(n.split(".")[1]), SUBLAYERS.index(n.split(".")[2])
        groups.setdefault((layer, sub), []).append(i)
    with torch.no_grad():
        for (layer, sub), idx in groups.items():
            step[layer, sub] = math.sqrt(sum(float((after[i] - before[i]).pow(2).sum()) for i in idx))
            for i, p in enumerate(params):
                p.copy_(after[i] if i in idx else before[i])
            effect[layer, sub] = float((final() - x0).norm() / x0.norm())
    return u, step, effect


def collapse_curve(cfg: Config, variant: str, mask: str, sample: int) -> np.ndarray:
    """Rank residual of the stream after the embedding and each block of a collapse variant (L + 1,)."""
    L = cfg.collapse_depth
    overrides = dict(COLLAPSE_VARIANTS[variant])
    if "branch_scale" in overrides:
        overrides["branch_scale"] = 1.0 / math.sqrt(L)
    mcfg = cfg.model_config(
        input="tokens",
        output="none",
        n_layers=L,
        causal=mask == "causal",
        dtype="float64",
        seed=replicate_seed(cfg.seed, sample),
        **overrides,
    )
    inputs = batch(cfg, sample)[0].to(cfg.torch_device())
    with torch.no_grad():
        _, c = run_with_cache(TinyTransformer(mcfg, device=cfg.torch_device()), inputs, names=resid_names(L, "depth"))
    streams = [c[name] for name in resid_names(L, "depth")]
    return np.array([th.rank_residual(x).mean().item() for x in streams])


# ================================================================================================
# trained runs: DeepNet stability at depth, Curse of Depth (variance profile, layer ablation)
# ================================================================================================

STABILITY_NORMS = ("post", "deepnorm")
STABILITY_BATCH = 16  # sequences per update of a stability run (half the probe's recipe: cost)
STABILITY_DTYPE = "float32"  # training precision of the stability runs (speed; no closed form is compared exactly)
CURSE_NORMS = ("pre", "ln_scaling")
HELD_OUT = 128  # held-out Markov sequences of the variance profiles and layer ablations (the same for every model)


def stability_train_config(cfg: Config) -> TrainConfig:
    """The probe's training recipe (:func:`train_config`: AdamW without weight decay, i.e. Adam, peak rate 3e-3,
    cosine decay, clipping at 1) with the warm-up removed, ``stability_steps`` updates of ``STABILITY_BATCH``."""
    return TrainConfig(
        steps=cfg.stability_steps,
        batch_size=STABILITY_BATCH,
        lr=train_config(cfg).lr,
        warmup_steps=0,
        weight_decay=0.0,
        seed=cfg.seed,
    )


def stability_run(cfg: Config, norm: str, sample: int) -> tuple[np.ndarray, float]:
    """One Post-LN or DeepNorm run at ``stability_depth`` without warm-up (cached): its training-loss curve
    and the relative change of the final stream after the first update,
    ``|x_L(theta_1) - x_L(theta_0)| / |x_L(theta_0)|`` on the sample's batch (the one-step model update of
    theory section 10 at the training rate)."""
    seed = replicate_seed(cfg.seed, sample)
    mcfg = dataclasses.replace(model_config(cfg, norm, cfg.stability_depth, seed), dtype=STABILITY_DTYPE)
    res = train(mcfg, task(cfg), stability_train_config(cfg), device=cfg.torch_device(), progress=False, snapshots=(1,))
    inputs = batch(cfg, sample)[0].to(cfg.torch_device())
    name = resid_names(cfg.stability_depth)[-1]
    with torch.no_grad():
        x0 = run_with_cache(TinyTransformer(mcfg, device=cfg.torch_device()), inputs, names=[name])[1][name].double()
        x1 = run_with_cache(res.snapshot_model(1), inputs, names=[name])[1][name].double()
    return np.asarray(res.history["loss"], dtype=np.float64), float((x1 - x0).norm() / x0.norm())


def held_out(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """``HELD_OUT`` Markov sequences from a generator used for nothing else (not the training stream)."""
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 999_983)
    return task(cfg).sample(HELD_OUT, gen)


@torch.no_grad()
def ablated_loss(model, inputs: torch.Tensor, targets: torch.Tensor, layer: int | None = None) -> float:
    """Mean next-token cross-entropy with block ``layer`` removed (its output replaced by its input: the
    block's residual contribution zeroed), or of the whole model (``layer=None``)."""
    if layer is None:
        return float(torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten()))
    if not 0 <= layer < model.n_layers:
        raise ValueError(f"layer must be in [0, {model.n_layers}), got {layer!r}")
    seen: list[torch.Tensor] = []

    def keep(x: torch.Tensor, name: str) -> None:
        seen.append(x)

    def skip(x: torch.Tensor, name: str) -> torch.Tensor:
        return seen[-1]

    with hooks(model, [(f"blocks.{layer}.hook_resid_pre", keep), (f"blocks.{layer}.hook_resid_post", skip)]):
        logits = model(inputs)
    return float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()))


def sum_rule_at_init(cfg: Config, norm: str, depth: int, sample: int, inputs: torch.Tensor) -> np.ndarray:
    """(depth + 1,) the Pre-LN sum rule ``m_0 + sum_l (a_l + g_l)`` (theory sections 1-3) of the untrained model
    of the same seed on ``inputs``: ``a_l`` from its attention patterns and normalised inputs, ``g_l`` in closed
    form; what the stream's growth would be if training kept the initialisation's law."""
    model = TinyTransformer(model_config(cfg, norm, depth, replicate_seed(cfg.seed, sample)), device=cfg.torch_device())
    first = resid_names(depth, "depth")[0]
    names = [first] + [f"blocks.{l}.{h}" for l in range(depth) for h in ("attn.hook_pattern", "ln1.hook_normalized")]
    with torch.no_grad():
        _, c = run_with_cache(model, inputs.to(model_device(model)), names=names)
    a = [
        th.attention_branch_moment(c[f"blocks.{l}.attn.hook_pattern"], c[f"blocks.{l}.ln1.hook_normalized"])
        .mean()
        .item()
        for l in range(depth)
    ]
    return th.pre_ln_moment(c[first].double().pow(2).mean().item(), np.array(a), _mlp_terms(cfg, norm, depth))


def curse_measure(cfg: Config, norm: str, sample: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """A trained model of the deepest depth (the sweep's own checkpoint for samples it has): its residual
    second moments ``m_l`` (L + 1,) on the held-out batch, the loss increase when each block is removed
    (L,), its held-out loss, and the same seed's sum rule at initialisation (:func:`sum_rule_at_init`)."""
    L = max(cfg.depths)
    model = build(cfg, norm, L, replicate_seed(cfg.seed, sample))
    inputs, targets = (t.to(model_device(model)) for t in held_out(cfg))
    names = resid_names(L, "depth")
    with torch.no_grad():
        _, c = run_with_cache(model, inputs, names=names)
    m = np.array([c[n].double().pow(2).mean().item() for n in names])
    base = ablated_loss(model, inputs, targets)
    inc = np.array([ablated_loss(model, inputs, targets, l) - base for l in range(L)])
    return m, inc, base, sum_rule_at_init(cfg, norm, L, sample, inputs)


def deep_share(increase: np.ndarray) -> float:
    """Share of the deep half in the layer-ablation damage, per block: ``D / (D + S)`` with ``D`` the mean
    loss increase over blocks ``L//2 .. L-1`` and ``S`` over ``1 .. L//2 - 1`` (block 0, the only one reading
    the raw embedding, is left out). 1/2: every block equally important. NaN when ``D + S <= 0`` or ``L < 4``."""
    inc = np.asarray(increase, dtype=np.float64)
    L = inc.size
    if L < 4:
        return math.nan
    deep, shallow = inc[L // 2 :].mean(), inc[1 : L // 2].mean()
    total = deep + shallow
    return float(deep / total) if np.isfinite(total) and total > 0 else math.nan


def _trained_extras(cfg: Config, data: xr.Dataset) -> None:
    """The trained run's stability runs and Curse-of-Depth measurements, added to ``data`` in place."""
    S = cfg.stability_seeds
    loss = np.full((len(STABILITY_NORMS), S, cfg.stability_steps), np.nan)
    upd = np.full((len(STABILITY_NORMS), S), np.nan)
    for i, norm in enumerate(STABILITY_NORMS):
        for s in range(S):
            loss[i, s], upd[i, s] = stability_run(cfg, norm, s)
    sc = {"stab_norm": list(STABILITY_NORMS), "stab_seed": np.arange(S)}
    data["stab_loss"] = xr.DataArray(
        loss, dims=("stab_norm", "stab_seed", "stab_step"), coords=sc | {"stab_step": np.arange(cfg.stability_steps)}
    )
    data["stab_update"] = xr.DataArray(upd, dims=("stab_norm", "stab_seed"), coords=sc)
    data.attrs["unigram_entropy"] = task(cfg).unigram_entropy
    data.attrs["entropy_rate"] = task(cfg).entropy_rate
    norms = [n for n in CURSE_NORMS if n in cfg.norms]
    if not norms:
        return
    L, C = max(cfg.depths), cfg.curse_seeds
    m = np.full((len(norms), L + 1, C), np.nan)
    inc = np.full((len(norms), L, C), np.nan)
    base = np.full((len(norms), C), np.nan)
    rule = np.full_like(m, np.nan)
    for i, norm in enumerate(norms):
        for s in range(C):
            m[i, :, s], inc[i, :, s], base[i, s], rule[i, :, s] = curse_measure(cfg, norm, s)
    cc = {"curse_norm": norms, "curse_seed": np.arange(C)}
    data["curse_resid_var"] = xr.DataArray(
        m, dims=("curse_norm", "cpos_trained", "curse_seed"), coords=cc | {"cpos_trained": np.arange(L + 1)}
    )
    data["curse_sum_rule_init"] = xr.DataArray(
        rule, dims=("curse_norm", "cpos_trained", "curse_seed"), coords=cc | {"cpos_trained": np.arange(L + 1)}
    )
    data["curse_ablation"] = xr.DataArray(
        inc, dims=("curse_norm", "clayer", "curse_seed"), coords=cc | {"clayer": np.arange(L)}
    )
    data["curse_loss"] = xr.DataArray(base, dims=("curse_norm", "curse_seed"), coords=cc)


# ================================================================================================
# the run
# ================================================================================================


POS_FIELDS = ("resid_var", "resid_rms", "resid_rms_min", "token_cosine", "rank_residual", "post_ln_moment")
LAYER_FIELDS = ("angular_distance", "jacobian_identity_gap", "jacobian_norm", "attn_moment", "mlp_moment")


def run(config: Config, model=None, progress: bool = True) -> Result:
    """The zoo sweep (``model=None``), or the same statistics of one passed token model."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models and batches: one thread is faster, and the machine is shared
    try:
        return _run(config, progress) if model is None else run_model(config, model, progress)
    finally:
        torch.set_num_threads(threads)


def _dataset(norms: list, depths: list, S: int, params: tuple[str, ...], measured: dict) -> xr.Dataset:
    """Assemble ``measured[(norm index, depth index, sample)] = measure(...)`` into labelled arrays."""
    Lmax = max(depths)
    shape_pos = (len(norms), len(depths), Lmax + 1, S)
    shape_layer = (len(norms), len(depths), Lmax, S)
    arrays = {k: np.full(shape_pos, np.nan) for k in POS_FIELDS}
    arrays |= {k: np.full(shape_layer, np.nan) for k in LAYER_FIELDS}
    branch = np.full((len(norms), len(depths), Lmax, 2, S), np.nan)
    grads = np.full((len(norms), len(depths), Lmax, len(params), S), np.nan)
    loss = np.full((len(norms), len(depths), S), np.nan)
    for (i, j, s), m in measured.items():
        L = depths[j]
        for k in POS_FIELDS:
            arrays[k][i, j, : L + 1, s] = m[k]
        for k in LAYER_FIELDS:
            arrays[k][i, j, :L, s] = m[k]
        branch[i, j, :L, :, s] = m["branch_ratio"]
        grads[i, j, :L, :, s] = m["grad_norm"]
        loss[i, j, s] = m["loss"]
    coords = {
        "norm": norms,
        "depth": depths,
        "pos": np.arange(Lmax + 1),
        "layer": np.arange(Lmax),
        "sample": np.arange(S),
        "param": list(params),
        "sublayer": list(SUBLAYERS),
    }
    dp, dl = ("norm", "depth", "pos", "sample"), ("norm", "depth", "layer", "sample")
    return xr.Dataset(
        {k: (dp, arrays[k]) for k in POS_FIELDS}
        | {k: (dl, arrays[k]) for k in LAYER_FIELDS}
        | {
            "branch_ratio": (("norm", "depth", "layer", "sublayer", "sample"), branch),
            "grad_norm": (("norm", "depth", "layer", "param", "sample"), grads),
            "loss": (("norm", "depth", "sample"), loss),
        },
        coords=coords,
    )


def _run(config: Config, progress: bool) -> Result:
    cfg = config
    norms, depths = list(cfg.norms), sorted(cfg.depths)
    S = cfg.n_samples
    if cfg.data == "corpus":  # byte-level models (model_vocab), untrained (Config.validate)
        batches = corpus_batches(cfg, build(cfg, norms[0], depths[0], cfg.seed))
    else:
        batches = [batch(cfg, s) for s in range(S)]
    jobs = [(i, n, j, L, s) for i, n in enumerate(norms) for j, L in enumerate(depths) for s in range(S)]
    measured = {}
    for i, norm, j, L, s in bar(jobs, desc=NAME, progress=progress):
        model_ = build(cfg, norm, L, replicate_seed(cfg.seed, s), progress=False)
        inputs, targets = batches[s]
        measured[i, j, s] = measure(
            model_,
            inputs,
            targets,
            mlp=cfg.mlp,
            pre_like=norm in PRE_LIKE,
            jacobian=cfg.jacobian and s < JACOBIAN_SAMPLES,
            no_norm=norm == "none",
            seed=cfg.seed,
        )
    data = _dataset(norms, depths, S, PARAMS, measured)

    collapse = np.full((len(COLLAPSE_VARIANTS), len(MASKS), cfg.collapse_depth + 1, S), np.nan)
    if not cfg.trained:
        for v, variant in enumerate(COLLAPSE_VARIANTS):
            for k, mask in enumerate(MASKS):
                for s in range(S):
                    collapse[v, k, :, s] = collapse_curve(cfg, variant, mask, s)
    data["collapse_residual"] = xr.DataArray(
        collapse,
        dims=("variant", "mask", "cpos", "sample"),
        coords={
            "variant": list(COLLAPSE_VARIANTS),
            "mask": list(MASKS),
            "cpos": np.arange(cfg.collapse_depth + 1),
            "sample": np.arange(S),
        },
    )
    SU = min(UPDATE_SAMPLES, S)
    Lmax = max(depths)
    upd = np.full((len(UPDATE_NORMS), len(depths), len(th.OPTIMISERS), SU), np.nan)
    step = np.full((len(UPDATE_NORMS), len(depths), len(th.OPTIMISERS), Lmax, 2, SU), np.nan)
    effect = np.full_like(step, np.nan)
    if not cfg.trained:
        for i, norm in enumerate(UPDATE_NORMS):
            for j, L in enumerate(depths):
                for k, opt in enumerate(th.OPTIMISERS):
                    for s in range(SU):
                        upd[i, j, k, s], step[i, j, k, :L, :, s], effect[i, j, k, :L, :, s] = update_pieces(
                            cfg, norm, L, s, opt
                        )
    ucoords = {
        "update_norm": list(UPDATE_NORMS),
        "depth": depths,
        "optimiser": list(th.OPTIMISERS),
        "usample": np.arange(SU),
    }
    data["update_size"] = xr.DataArray(upd, dims=("update_norm", "depth", "optimiser", "usample"), coords=ucoords)
    udims = ("update_norm", "depth", "optimiser", "layer", "sublayer", "usample")
    data["update_step"] = xr.DataArray(step, dims=udims, coords=ucoords)
    data["update_effect"] = xr.DataArray(effect, dims=udims, coords=ucoords)
    if cfg.trained:
        _trained_extras(cfg, data)
    if cfg.phase:
        data = data.merge(phase.run(cfg, progress), combine_attrs="no_conflicts")
    data.attrs["gelu_second_moment"] = th.gelu_second_moment(1.0)
    data.attrs["trained"] = int(cfg.trained)
    data.attrs["source"] = "zoo"
    led = Ledger(NAME, preset=cfg.preset_name)
    scalars = record_claims(cfg, data, led)
    return Result(probe=NAME, config=cfg, data=data, scalars=scalars, ledger=led)


def run_model(config: Config, model, progress: bool = True) -> Result:
    """The per-layer statistics of one passed token model (causal or bidirectional, any library).

    Batches: ``n_samples`` batches of ``batch_size`` sequences of ``seq_len`` tokens, Markov ids within
    the model's vocabulary or corpus text in its own tokenizer (``config.data``). The arrays keep the
    sweep's layout with ``norm = ["model"]``, ``depth = [n_layers]`` and ``sample`` indexing the data
    batches (the weights are fixed), so a notebook plots them with the zoo's. Gradients are those of
    :func:`fixed_loss`, per weight matrix for our parameter names, else per layer in total. Only the
    measurements are recorded (scalars): no theory or paper claim is made about a passed model, and
    the zoo sweep's claims are not evaluated.
    """
    cfg = config
    if cfg.phase:
        raise ValueError("phase needs the zoo sweep (no passed model): the phase diagram builds its own models")
    protocol.describe(model)  # a ProbeModel, or a ValueError naming what is missing
    if model.input_kind != "tokens":
        raise ValueError(f"signal_propagation needs a token model (input_kind 'tokens'), got {model.input_kind!r}")
    protocol.check_length(model, cfg.seq_len, "seq_len")
    V = protocol.vocab_size(model)
    if cfg.data == "corpus":
        batches = corpus_batches(cfg, model)
    else:
        if V is None:
            raise ModelIncompatibleError(
                "data='markov' needs the model's vocabulary size (analysis.protocol.vocab_size)"
            )
        batches = [batch(cfg, s, vocab=V) for s in range(cfg.n_samples)]
    L = int(model.n_layers)
    mlp = "blocks.0.hook_mlp_out" in set(model.hook_names())
    was_training = bool(getattr(model, "training", False))
    if hasattr(model, "eval"):
        model.eval()  # no dropout: the statistics of the deterministic forward pass
    measured, loss_kind = {}, ""
    try:
        for s, (inputs, targets) in enumerate(bar(batches, desc=NAME, progress=progress)):
            m = measure(
                model,
                inputs,
                targets,
                mlp=mlp,
                pre_like=False,
                jacobian=cfg.jacobian and s < JACOBIAN_BATCHES,
                seed=cfg.seed,
            )
            measured[0, 0, s] = m
        with torch.no_grad():
            out = model(batches[0][0][:1])
        loss_kind = fixed_loss(out, batches[0][1][:1], V, cfg.seed)[1]
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    data = _dataset(["model"], [L], cfg.n_samples, param_names(model), measured)
    data.attrs |= {
        "source": "passed model",
        "model_type": type(model).__name__,
        "causal": int(bool(model.causal)),
        "data": cfg.data,
        "loss_kind": loss_kind,
        "trained": -1,
    }
    r = data["rank_residual"].sel(norm="model", depth=L).mean("sample").values  # (L + 1,)
    cos = data["token_cosine"].sel(norm="model", depth=L).mean("sample").values
    scalars = {
        "n_layers": L,
        "causal": bool(model.causal),
        "loss": float(data["loss"].mean()),
        "rank_residual_first": float(r[0]),
        "rank_residual_last": float(r[-1]),
        "rank_residual_last_over_first": float(r[-1] / r[0]),
        "rank_residual_min": float(np.min(r)),
        "token_cosine_first": float(cos[0]),
        "token_cosine_last": float(cos[-1]),
    }
    led = Ledger(NAME, preset=cfg.preset_name)
    return Result(probe=NAME, config=cfg, data=data, scalars=scalars, ledger=led)


# ================================================================================================
# claims
# ================================================================================================
#
# One function per theorem or paper, each reading only the result (the Dataset, the config and the
# scalars dict it adds to). Every claim depends on random weights, so its band is the 95% Student-t band over
# the independent initialisations (analysis.evidence): replicates= the per-seed values of the measurement (a
# slope is fitted to each seed's own curve), or se= the SE over seeds of a per-seed difference with dof = n - 1;
# every prediction names the value a competing hypothesis predicts.


def _seeds(v: np.ndarray) -> list[float]:
    """The per-seed replicate values of a claim: the finite entries of ``v`` (a seed whose statistic is
    undefined, e.g. a log-decrement growth with too few steps above round-off or a seed without Jacobians, is
    left out, and the band's ``n`` counts the others); ``[nan]`` when none is finite (the claim is unmeasured)."""
    v = np.asarray(v, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    return [float(x) for x in v] if v.size else [math.nan]


def _paired_se(d: np.ndarray) -> tuple[float, float]:
    """SE over seeds of the finite per-seed values ``d`` (measurement minus prediction, same seed) and its
    degrees of freedom ``n - 1``: the band of a prediction whose expected value is itself measured per seed."""
    st = mean_se(_seeds(d))
    return st.se, float(max(st.n - 1, 0))


def _slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(sample,) log-log slope of each seed's column of ``y`` (points, sample) on ``x`` (points,) or on its own
    column of ``x`` (points, sample)."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    xs = x if x.ndim == 2 else np.repeat(x[:, None], y.shape[1], axis=1)
    return np.array([th.loglog_slope(xs[:, s], y[:, s])[0] for s in range(y.shape[1])])


def last_layer_grad(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) gradient norm of the last block's MLP read-out (W_out; W_o without MLP)."""
    g = data["grad_norm"].sel(norm=norm)
    p = "W_out" if np.isfinite(g.sel(param="W_out")).any() else "W_o"
    return np.stack([g.sel(depth=L, layer=L - 1, param=p).values for L in data.depth.values])


def final_moment(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) residual second moment after the last block."""
    v = data["resid_var"].sel(norm=norm)
    return np.stack([v.sel(depth=L, pos=L).values for L in data.depth.values])


def _stream(data: xr.Dataset, norm: str) -> tuple[int, np.ndarray, np.ndarray]:
    """Deepest model of ``norm``: (L, moments m_l (L + 1, sample), per-block increments (L, sample))."""
    L = int(max(data.depth.values))
    v = data["resid_var"].sel(norm=norm, depth=L).values[: L + 1]
    return L, v, np.diff(v, axis=0)


def _mlp_terms(cfg: Config, norm: str, L: int) -> np.ndarray:
    """(L,) the Pre-LN MLP moments g_l = E gelu(s_l z)^2 (s_l = 1/sqrt(l) under LayerNorm scaling)."""
    if not cfg.mlp:
        return np.zeros(L)
    s = [th.ln_scaling_factor(k) if norm == "ln_scaling" else 1.0 for k in range(1, L + 1)]
    return np.array([th.gelu_second_moment(x) for x in s])


INCREMENT_WHY = (
    "95% t band over the initialisations (n seeds, dof n - 1) of each seed's mean per-block residual (increment - "
    "prediction, the prediction measured on the same seed): each block's residual has conditional mean zero given "
    "the stream before it (the branch's last weight matrix is sign-symmetric and independent of it), so a seed's "
    "mean residual has mean zero and the seeds are independent"
)


def claim_pre_ln_sum_rule(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Theory sections 1-3: a Pre-LN block adds a_l + g_l to the stream's second moment; the closed-form
    envelope a_l in [0, s_l^2] bounds the mean increment per block."""
    if cfg.trained or not cfg.skip:
        return
    for norm in [n for n in data.norm.values if n in PRE_LIKE]:
        L, v, inc = _stream(data, norm)
        a = data["attn_moment"].sel(norm=norm, depth=L).values[:L]  # (layer, sample)
        g = _mlp_terms(cfg, norm, L)[:, None]
        se, dof = _paired_se((inc - a - g).mean(0))  # (sample,) each seed's mean residual
        sc[f"{norm}_increment_per_block"] = float(inc.mean())
        led.predict(
            f"{norm}_variance_sum_rule",
            measured=float(inc.mean()),
            expected=float((a + g).mean()),
            se=se,
            dof=dof,
            alternative=float(g.mean()),
            hypothesis="the attention branch adds no second moment (a_l = 0): only the MLP's g_l",
            source="derivation (theory sections 1-3): E[m_{l+1} - m_l | stream] = a_l + g_l, summed: "
            "E m_L = m_0 + sum_l (a_l + g_l)",
            why=INCREMENT_WHY,
            statement=f"{norm}, L={L}: mean increment of m_l per block = mean (a_l + g_l)",
            figure="signal_variance_profiles",
        )
        lower, upper = th.pre_ln_envelope(0.0, L, cfg.mlp, norm == "ln_scaling")
        src = "derivation (theory sections 2-3): 0 <= a_l <= s_l^2 for any attention pattern"
        led.bound(
            f"{norm}_increment_above_mlp_floor",
            measured=float(inc.mean()),
            bound=float(lower[-1] / L),
            relation=">=",
            source=src,
            why="the envelope's lower end (a_l = 0) per block; the point estimate of the mean increment, not widened",
            statement=f"{norm}, L={L}: mean increment >= mean g_l",
            figure="signal_variance_profiles",
        )
        led.bound(
            f"{norm}_increment_below_envelope",
            measured=float(inc.mean()),
            bound=float(upper[-1] / L),
            relation="<=",
            source=src,
            why="the envelope's upper end (a_l = s_l^2) per block; the point "
            "estimate of the mean increment, not widened",
            statement=f"{norm}, L={L}: mean increment <= mean (s_l^2 + g_l)",
            figure="signal_variance_profiles",
        )


def claim_peri_ln_linear(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Theory section 4: each Peri-LN sublayer adds exactly one unit (its output is a LayerNorm output)."""
    if cfg.trained or not cfg.skip or "peri" not in data.norm.values:
        return
    L, v, inc = _stream(data, "peri")
    per = 2.0 if cfg.mlp else 1.0
    g = th.gelu_second_moment(1.0) if cfg.mlp else 0.0
    led.predict(
        "peri_variance_linear",
        replicates=_seeds(inc.mean(0)),  # (sample,) each seed's mean increment per block
        expected=per,
        alternative=1.0 + g,
        hypothesis="no output LayerNorm: a block adds at most s^2 + g (the Pre-LN envelope)",
        source="derivation (theory section 4, 000#11 Peri-LN): E m_L = m_0 + (sublayers per block) L",
        why="95% t band over the initialisations (n seeds) of each seed's mean increment per block: a block's "
        "increment minus its prediction has conditional mean zero given the stream before it (the branch's last "
        "weight matrix is sign-symmetric and independent of it), and the seeds are independent",
        seed="000#11",
        statement=f"peri, L={L}: mean increment of m_l per block = {per:g}",
        figure="signal_variance_profiles",
    )


def claim_pre_ln_growth_law(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """GPAS (000#2) / Curse of Depth (000#50): Pre-LN variance grows exponentially with depth. At
    initialisation our sum rule makes it linear; the papers' exponential is the alternative."""
    depths = sorted(int(L) for L in data.depth.values)
    if cfg.trained or not cfg.skip or "pre" not in data.norm.values or len(depths) < 3 or depths[-1] < 8:
        return
    a_, b_, deep = depths[-3:]
    ma, mb, md = (data["resid_var"].sel(norm="pre", depth=L, pos=L).values for L in (a_, b_, deep))  # (sample,)
    lin = mb + (mb - ma) * (deep - b_) / (b_ - a_)
    expo = mb * (mb / ma) ** ((deep - b_) / (b_ - a_))
    sc["pre_variance_linear_extrapolation"] = float(lin.mean())
    sc["pre_variance_exponential_extrapolation"] = float(expo.mean())
    se, dof = _paired_se(md - lin)
    led.predict(
        "pre_variance_growth_linear",
        measured=float(md.mean()),
        expected=float(lin.mean()),
        se=se,
        dof=dof,
        alternative=float(expo.mean()),
        hypothesis="000#2 GPAS / 000#50 Curse of Depth: exponential growth, m_L extrapolated geometrically",
        source="derivation (theory sections 1-3): a bounded moment per block, so m_L grows linearly at init",
        why=f"95% t band over the initialisations (n seeds, dof n - 1) of m_{deep} minus the straight line through "
        f"m_{a_}, m_{b_} of the same initialisation",
        seed="000#2",
        statement=f"pre, init: m_{deep} on the line through L={a_}, {b_} (not on the exponential)",
        figure="signal_variance_profiles",
    )


def claim_post_ln_unit(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """A Post-LN stream is a LayerNorm output: its second moment is sigma^2 / (sigma^2 + eps) per token
    (at initialisation, where the LayerNorm's gain is 1 and its bias 0). Claimed with skip connections only:
    the tolerance needs token variances above 1e-2, which a unit stream plus a branch has; a bare branch
    need not (skip=false, d_model=2 gave 1 - m = 1.4e-3)."""
    if cfg.trained or not cfg.skip or "post" not in data.norm.values:
        return
    v, e = data["resid_var"].sel(norm="post"), data["post_ln_moment"].sel(norm="post")
    worst = max(
        float(np.nanmax(np.abs(v.sel(depth=L).values[1 : L + 1] - e.sel(depth=L).values[1 : L + 1])))
        for L in data.depth.values
    )
    led.identity(
        "post_variance_unit",
        measured=worst,
        expected=0.0,
        atol=1e-12,
        source="construction: every Post-LN block ends in a LayerNorm (unit gain, zero bias)",
        why="the output's second moment is mean_t sigma_t^2 / (sigma_t^2 + eps) exactly (sigma_t^2: the norm "
        "input's variance over the width, read at its hook); float64 round-off of means over <= 1e4 values",
        statement="post: m_l = mean_t sigma_t^2 / (sigma_t^2 + eps) (= 1 - O(eps / sigma^2)) at every block and depth",
        figure="signal_variance_profiles",
    )


def claim_no_norm_growth(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Theory section 8: without norms each block adds a_l + mean_t G(q_mid,t): exponential growth."""
    if cfg.trained or not cfg.skip or "none" not in data.norm.values:
        return
    L, v, inc = _stream(data, "none")
    a = data["attn_moment"].sel(norm="none", depth=L).values[:L]
    gm = data["mlp_moment"].sel(norm="none", depth=L).values[:L] if cfg.mlp else np.zeros_like(a)
    m = v[:L]  # the block's input moment: relative increments have comparable spread at every depth
    se, dof = _paired_se(((inc - a - gm) / m).mean(0))  # (sample,) each seed's mean relative residual
    led.predict(
        "none_variance_sum_rule",
        measured=float((inc / m).mean()),
        expected=float(((a + gm) / m).mean()),
        se=se,
        dof=dof,
        alternative=float((gm / m).mean()),
        hypothesis="the attention branch adds no second moment (a_l = 0): only the MLP's G",
        source="derivation (theory section 8): E[m_{l+1} - m_l | stream] = a_l + mean_t G(q_mid,t)",
        why=INCREMENT_WHY + "; each residual is divided by the block's input moment m_l (known given the past)",
        statement=f"none, L={L}: mean relative increment (m_{{l+1}} - m_l)/m_l = mean (a_l + G_l)/m_l",
        figure="signal_variance_profiles",
    )
    m0 = float(v[0].mean())
    lower = float(th.no_norm_lower_bound(m0, L, cfg.mlp)[-1])
    sc["none_variance_lower_bound"] = lower
    led.bound(
        "none_variance_lower_bound",
        measured=float(v[L].mean()),
        bound=lower,
        relation=">=",
        source="derivation (theory section 8): G(q) >= q/4 and a_l >= 0, both linear, give E m_L >= (5/4)^L m_0",
        why="rigorous for E m_L at any width; the sample mean is compared unwidened. A tighter closed form needs "
        "a lower bound on the attention ratio kappa (not derived) or a convex minorant of G (the mean-field "
        "iterate is no bound: G is not convex at large q); the tight law is none_exponential_growth_factor",
        statement=f"none, L={L}: m_L >= (5/4)^L m_0",
        figure="signal_variance_profiles",
    )
    if L < 8:
        return
    half = L // 2
    layers = np.arange(half, L + 1)
    # per seed: the growth factor exp(slope) of its own log m_l over the deep half, and its own kappa = a_l / m_l
    growth = np.array([np.exp(stats.linregress(layers, np.log(v[half : L + 1, s])).slope) for s in range(v.shape[1])])
    kappas = np.nanmean(a[half:] / v[half:L], axis=0)  # (sample,)
    predicted = np.array([th.no_norm_growth_factor(k, cfg.mlp) for k in kappas])
    kappa = float(np.nanmean(kappas))
    se, dof = _paired_se(growth - predicted)
    sc["none_growth_factor_per_block"] = float(np.mean(growth))
    sc["none_kappa_deep_mean"] = kappa
    led.predict(
        "none_exponential_growth_factor",
        measured=float(np.mean(growth)),
        expected=th.no_norm_growth_factor(kappa, cfg.mlp),
        se=se,
        dof=dof,
        alternative=th.no_norm_growth_factor(0.0, cfg.mlp),
        hypothesis="the attention adds nothing (kappa = 0): factor 3/2 from the MLP alone",
        source="derivation (theory section 8): m_{l+1}/m_l -> (1 + kappa) 3/2, kappa = a_l/m_l measured",
        why="95% t band over the initialisations (n seeds, dof n - 1) of each seed's exp(slope) of log m_l on l "
        "over the deep half minus (1 + kappa) 3/2 at that seed's own mean kappa (the law is linear in kappa, so "
        "the mean prediction is the law at the mean kappa)",
        regime=["none_variance_sum_rule"],  # the growth law is the sum rule's increment a_l + G at large q
        scale=f"the law is the mean-field limit d -> inf (theory section 8); here d_model = {cfg.d_model}: the "
        "per-block ratios m_{l+1}/m_l fluctuate (sd of their log about 0.3 at d = 32, 0.14 at d = 128) and exp(slope), "
        "their geometric mean, lies below their mean by about half that variance; knob: d_model",
        statement=f"none, L={L}: per-block growth factor of m_l in the deep half = (1 + kappa) 3/2",
        requires_full=True,
        figure="signal_variance_profiles",
    )


def claim_deepnorm_layer_change(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Theory section 9 / DeepNet (000#65): a DeepNorm block turns the stream by beta^2/alpha ~ L^(-3/4);
    a Post-LN block by a depth-free angle."""
    big = [int(L) for L in data.depth.values if L >= 4]
    if cfg.trained or len(big) < 3:
        return
    norms = list(data.norm.values)
    ang = {
        n: np.stack([np.nanmean(data["angular_distance"].sel(norm=n, depth=L).values[:L], axis=0) for L in big])
        for n in ("deepnorm", "post")
        if n in norms
    }  # (depth, sample) mean per-layer angle
    rows = (
        (
            "deepnorm",
            th.DEEPNORM_ANGLE_EXPONENT,
            th.POST_LN_ANGLE_EXPONENT,
            "Post-LN's depth-free angle (alpha = beta = 1)",
        ),
        (
            "post",
            th.POST_LN_ANGLE_EXPONENT,
            -0.5,
            "the stream grows as in Pre-LN, each block turning it by m^-1/2 ~ L^-1/2",
        ),
    )
    for norm, expo, alt, hyp in rows:
        if norm not in ang:
            continue
        slopes = _seeds(_slopes(np.array(big, float), ang[norm]))  # (sample,) one fit per seed
        sc[f"{norm}_angle_vs_depth_exponent"] = mean_se(slopes).mean
        led.predict(
            f"{norm}_layer_change_vs_depth",
            replicates=slopes,
            expected=expo,
            alternative=alt,
            hypothesis=hyp,
            source="derivation (theory section 9) of Wang et al. 2022's DeepNorm init",
            why="95% t band over the initialisations (n seeds) of each seed's log-log slope of its mean per-layer "
            "angle on L over depths >= 4",
            seed="000#65",
            statement=f"{norm}, init: mean per-layer angular distance ~ L^{expo:g}",
            requires_full=True,
            figure="signal_deepnorm_update",
        )
    if len(ang) == 2:
        lr = _seeds(np.log(ang["deepnorm"][-1] / ang["post"][-1]))  # (sample,) same seeds
        sc["deepnorm_over_post_layer_change_deepest"] = float(np.exp(mean_se(lr).mean))
        led.direction(
            "deepnorm_smaller_layer_change_than_post",
            replicates=lr,
            sign=-1,
            alternative=0.0,
            hypothesis="DeepNorm's alpha, beta change nothing: the same angle as Post-LN",
            source="000#65 Wang et al. 2022: DeepNorm bounds the per-layer update that Post-LN lets grow",
            why=f"95% t band over the initialisations (n seeds) of the paired log(angle deepnorm / angle post) at "
            f"L = {big[-1]}",
            seed="000#65",
            statement=f"L={big[-1]}: log(angle(deepnorm) / angle(post)) < 0",
            figure="signal_deepnorm_update",
        )


def claim_deepnorm_update(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Wang et al. 2022 (DeepNet, 000#65) Theorem: the model update after one step is bounded by a depth
    factor (theory section 10): 1 (SGD) or sqrt(2N) (Adam) for DeepNorm, 4N or 2 sqrt 2 N for Post-LN."""
    ud = [int(L) for L in data.depth.values if L >= 2]
    if cfg.trained or len(ud) < 3:
        return
    x = np.array(ud, float)
    for opt in th.OPTIMISERS:
        fits = {}
        for norm in UPDATE_NORMS:
            u = data["update_size"].sel(update_norm=norm, optimiser=opt, depth=ud).values  # (depth, usample)
            fits[norm] = _slopes(x, u)  # (usample,) one fit per seed
            sc[f"{norm}_update_vs_depth_exponent_{opt}"] = float(np.mean(fits[norm]))
            sc[f"{norm}_update_deepest_{opt}"] = float(u[-1].mean())
        ds, ps = fits["deepnorm"], fits["post"]
        n_u = ds.size
        led.predict(
            f"deepnorm_update_vs_depth_{opt}",
            replicates=_seeds(ds),
            expected=th.UPDATE_BOUND_EXPONENT["deepnorm", opt],
            alternative=th.UPDATE_BOUND_EXPONENT["post", opt],
            hypothesis="Post-LN's bound (alpha = beta = 1): the update grows as N",
            source="Wang et al. 2022 (DeepNet) Theorem with alpha = (2N)^(1/4), beta = (8N)^(-1/4); theory "
            "section 10 for the depth factor per optimiser",
            why=f"95% t band over the initialisations (n seeds) of each seed's log-log slope over depths >= 2; "
            f"{n_u} seeds (UPDATE_SAMPLES = 3, not 5: compute, about 60 s per seed for 3 norms x every depth x 2 "
            "optimisers, one thread)",
            seed="000#65",
            statement=(
                f"deepnorm, one {opt} step from init: |dx_L|/|x_L| ~ L^{th.UPDATE_BOUND_EXPONENT['deepnorm', opt]:g}"
            ),
            requires_full=True,
            figure="signal_deepnorm_step",
        )
        led.direction(
            f"post_update_grows_faster_than_deepnorm_{opt}",
            replicates=_seeds(ps - ds),
            sign=1,
            alternative=0.0,
            hypothesis="DeepNorm's init changes nothing: the same depth exponent",
            source="Wang et al. 2022: Post-LN accumulates the sublayers' updates, DeepNorm does not",
            why="95% t band over the initialisations (n seeds) of the paired difference of the two log-log slopes "
            f"(post minus deepnorm, same weight seed and batch); {n_u} seeds (UPDATE_SAMPLES = 3, not 5: compute, "
            "about 60 s per seed)",
            seed="000#65",
            statement=f"one {opt} step from init: update exponent in L, post minus deepnorm > 0",
            requires_full=True,
            figure="signal_deepnorm_step",
        )
        led.bound(
            f"post_update_at_most_linear_{opt}",
            measured=float(np.mean(ps)),
            bound=th.UPDATE_BOUND_EXPONENT["post", opt],
            relation="<=",
            source="Wang et al. 2022 Theorem with alpha = beta = 1: Post-LN's update bound grows as N",
            why="the bound's depth exponent; the mean over seeds of the exponent fitted to each seed is compared "
            "unwidened. A miss is a fail until "
            "the growth is derived (the decomposition arrays update_step / update_effect hold its pieces)",
            seed="000#65",
            statement=f"post, one {opt} step from init: update exponent in L <= 1",
            requires_full=True,
            figure="signal_deepnorm_step",
        )
    if "update_effect" in data:
        _update_decomposition_scalars(data, ud, sc)


def _update_decomposition_scalars(data: xr.Dataset, ud: list[int], sc: dict) -> None:
    """Depth exponents of the pieces of the one-step update (see :func:`update_pieces`): the total step
    ``|dtheta|``, the mean per-sublayer effect and sensitivity (effect / step), their sum, and the
    coherence ``u / sum effect`` (1: the sublayers' changes of x_L add up aligned; << 1: they cancel)."""
    x = np.array(ud, float)
    for opt in data.optimiser.values:
        for norm in data.update_norm.values:
            sel = dict(update_norm=norm, optimiser=opt)
            pieces: dict[str, list[float]] = {
                "step_total": [],
                "effect_per_sublayer": [],
                "gain_per_sublayer": [],
                "effect_sum": [],
            }
            for L in ud:
                st = data["update_step"].sel(**sel, depth=L).values[:L]  # (layer, sublayer, usample)
                ef = data["update_effect"].sel(**sel, depth=L).values[:L]
                pieces["step_total"].append(float(np.sqrt((st**2).sum((0, 1))).mean()))
                pieces["effect_per_sublayer"].append(float(ef.mean()))
                pieces["gain_per_sublayer"].append(float((ef / st).mean()))
                pieces["effect_sum"].append(float(ef.sum((0, 1)).mean()))
            for key, y in pieces.items():
                sc[f"{norm}_update_{key}_exponent_{opt}"] = th.loglog_slope(x, np.array(y))[0]
            u = float(data["update_size"].sel(**sel, depth=ud[-1]).mean())
            sc[f"{norm}_update_coherence_deepest_{opt}"] = u / pieces["effect_sum"][-1]


def claim_token_correlation(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Noci et al. 2022: at initialisation the tokens' correlation grows with depth (Pre-LN)."""
    L = int(max(data.depth.values))
    if cfg.trained or "pre" not in data.norm.values or L < 4:
        return
    cos = data["token_cosine"].sel(norm="pre", depth=L).values[: L + 1]  # (pos, sample)
    growth = _seeds(cos[L] - cos[0])
    st = mean_se(growth)
    sc["pre_token_cosine_growth"], sc["pre_token_cosine_growth_se"] = st.mean, st.se
    sc["pre_token_cosine_spearman"] = float(stats.spearmanr(np.arange(L + 1), cos.mean(1)).statistic)
    led.direction(
        "pre_token_correlation_grows",
        replicates=growth,
        sign=1,
        alternative=0.0,
        hypothesis="depth leaves the tokens' mean cosine unchanged",
        source="Noci et al. 2022: at initialisation the tokens' correlation increases with depth (Pre-LN)",
        why="95% t band over the initialisations (n seeds) of cos(x_L) - cos(x_0)",
        requires_full=True,
        statement=f"pre, L={L}: mean pairwise token cosine after the last block exceeds the embedding's",
        figure="signal_init_vs_trained",
    )


def claim_last_layer_gradient(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Xiong et al. 2020 (000#4), theory section 5: the last layer's gradient ~ m_L^(-1/2) in Pre-LN,
    depth-free in Post-LN; Post-LN's is the larger."""
    depths = [int(L) for L in data.depth.values]
    big = [L for L in depths if L >= 2]
    norms = list(data.norm.values)
    if cfg.trained or len(big) < 3:
        return
    idx = [depths.index(L) for L in big]
    if "pre" in norms:
        g, m = last_layer_grad(data, "pre")[idx], final_moment(data, "pre")[idx]  # (depth, sample)
        slopes = _seeds(_slopes(m, g))  # each seed's gradients on its own moments
        sc["pre_last_grad_vs_depth_exponent"] = float(np.mean(_slopes(np.array(big, float), g)))
        sc["pre_last_grad_vs_moment_exponent"] = mean_se(slopes).mean
        led.predict(
            "pre_last_grad_vs_moment",
            replicates=slopes,
            expected=th.PRE_LN_GRADIENT_VS_MOMENT_EXPONENT,
            alternative=0.0,
            hypothesis="the final LayerNorm's 1/sqrt(m_L) does not reach the gradient",
            source="Xiong et al. 2020 adapted (theory section 5): grad ~ m_L^(-1/2)",
            seed="000#4",
            why="95% t band over the initialisations (n seeds) of each seed's log-log slope of its last-layer "
            "gradient on its own m_L over depths >= 2",
            statement="pre: log-log slope of last-layer W_out gradient on m_L = -1/2",
            requires_full=True,
            figure="signal_last_layer_gradient",
        )
    if "post" in norms:
        g = last_layer_grad(data, "post")[idx]
        slopes = _seeds(_slopes(np.array(big, float), g))
        sc["post_last_grad_vs_depth_exponent"] = mean_se(slopes).mean
        led.predict(
            "post_last_grad_depth_independent",
            replicates=slopes,
            expected=th.POST_LN_LAST_LAYER_EXPONENT,
            alternative=-0.5,
            hypothesis="Pre-LN's law: m_L^(-1/2) ~ L^(-1/2)",
            source="Xiong et al. 2020: Post-LN last-layer gradient O(1) in L",
            seed="000#4",
            why="95% t band over the initialisations (n seeds) of each seed's log-log slope of its last-layer "
            "gradient on L over depths >= 2",
            statement="post: last-layer gradient exponent in L = 0",
            requires_full=True,
            figure="signal_last_layer_gradient",
        )
    if {"pre", "post"} <= set(norms):
        j = depths.index(max(depths))
        lr = _seeds(np.log(last_layer_grad(data, "post")[j] / last_layer_grad(data, "pre")[j]))  # same seeds
        sc["post_over_pre_last_grad_deepest"] = float(np.exp(mean_se(lr).mean))
        led.direction(
            "post_larger_last_grad_than_pre",
            replicates=lr,
            sign=1,
            alternative=0.0,
            hypothesis="the norm placement does not change the last layer's gradient",
            source="000#4 Xiong et al.: Post-LN gradients near the output are large, Pre-LN well-behaved",
            why="95% t band over the initialisations (n seeds) of the paired log(grad post / grad pre) at the "
            "deepest model",
            seed="000#4",
            statement=f"L={max(depths)}: log(grad(post) / grad(pre)) > 0",
            requires_full=True,
            figure="signal_last_layer_gradient",
        )


def _curse_scale(cfg: Config) -> str:
    """How the Curse of Depth's (000#50) trained setting is larger than a trained run here, and the knobs."""
    return (
        f"000#50 pre-trains LLMs of 130M to 1B parameters; here L = {max(cfg.depths)}, d = {cfg.d_model}, "
        f"{cfg.train_steps} updates on a Markov language of {cfg.vocab_size} tokens; knobs toward it: train_steps, "
        "d_model (at most 128), depths (none reaches it)"
    )


def _gaps(data: xr.Dataset, norm: str, L: int) -> np.ndarray:
    """(layer, sample) log Jacobian gap of the depth-L model (NaN where not computed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(data["jacobian_identity_gap"].sel(norm=norm, depth=L).values[:L])


def claim_jacobian_gap(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Theory section 6 and Curse of Depth (000#50): Pre-LN blocks' Jacobians approach the identity with
    depth (|J_l - I| ~ m_l^(-1/2) at init); LayerNorm scaling's effect on the deep blocks."""
    L = int(max(data.depth.values))
    norms = list(data.norm.values)
    if "pre" not in norms or L < 4:
        return
    tag = "trained" if cfg.trained else "init"
    lg = _gaps(data, "pre", L)
    if not cfg.trained and cfg.skip:
        mom = data["resid_var"].sel(norm="pre", depth=L).values[:L]  # (layer, sample) input moment of block l
        js = [s for s in range(lg.shape[1]) if np.isfinite(lg[:, s]).all()]  # the seeds with Jacobians
        # block 0 reads the embedding: layers 1..L-1, each seed's gaps on its own moments
        slopes = _seeds(_slopes(mom[1:, js], np.exp(lg[1:, js]))) if js else [math.nan]
        sc["pre_jacobian_gap_vs_moment_exponent"] = mean_se(slopes).mean
        led.predict(
            "pre_jacobian_gap_vs_moment",
            replicates=slopes,
            expected=th.PRE_LN_JACOBIAN_VS_MOMENT_EXPONENT,
            alternative=0.0,
            hypothesis="the blocks' distance from the identity does not depend on the stream",
            source="derivation (theory section 6): |J_l - I| ~ m_l^(-1/2)",
            seed="000#50",
            why="95% t band over the initialisations with exact Jacobians (n seeds, the first JACOBIAN_SAMPLES) of "
            "each seed's log-log slope of |J_l - I| on its own m_l over layers 1..L-1",
            statement=f"pre, L={L}: slope of log |J_l - I| on log m_l = -1/2",
            requires_full=True,
            figure="signal_jacobian_gap",
        )
    half = L // 2
    with np.errstate(invalid="ignore"):  # seeds without Jacobians are all NaN and left out
        d = _seeds(lg[half:].mean(0) - lg[:half].mean(0))  # (sample,) per seed, deep half minus shallow half
    sc[f"pre_jacobian_gap_late_over_early_{tag}"] = float(np.exp(mean_se(d).mean))
    led.direction(
        f"pre_deep_blocks_near_identity_{tag}",
        replicates=d,
        sign=-1,
        alternative=0.0,
        hypothesis="every block equally far from the identity",
        seed="000#50",
        source="000#50 Curse of Depth: deep Pre-LN blocks' Jacobians approach the identity"
        + ("" if cfg.trained else "; at init theory section 6 (m_l grows)"),
        why="95% t band over the initialisations with exact Jacobians (n seeds) of each seed's mean log gap over "
        "the deep half minus that over the shallow half",
        statement=f"pre ({tag}), L={L}: mean log gap, deep half < shallow half",
        requires_full=True,
        figure="signal_jacobian_gap",
    )
    if "ln_scaling" not in norms:
        return
    with np.errstate(invalid="ignore"):
        d = _seeds(_gaps(data, "ln_scaling", L)[half:].mean(0) - lg[half:].mean(0))  # (sample,) same seeds: paired
    sc[f"ln_scaling_over_pre_deep_gap_{tag}"] = float(np.exp(mean_se(d).mean))
    why = (
        "95% t band over the initialisations with exact Jacobians (n seeds) of the paired difference of each "
        "seed's mean log gap over the deep half, ln_scaling minus pre (same weight seed and batch)"
    )
    if cfg.trained:
        led.direction(
            "ln_scaling_moves_deep_blocks_from_identity",
            replicates=d,
            sign=1,
            alternative=0.0,
            hypothesis="LayerNorm scaling leaves the deep blocks' distance from the identity unchanged",
            source="000#50 Curse of Depth: LayerNorm scaling makes deep blocks less identity-like (trained LLMs)",
            why=why,
            scale=_curse_scale(cfg),
            seed="000#50",
            statement=f"trained, L={L}: mean log gap over the deep half, ln_scaling > pre",
            requires_full=True,
            figure="signal_jacobian_gap",
        )
    else:
        led.direction(
            "ln_scaling_deep_blocks_closer_to_identity_at_init",
            replicates=d,
            sign=-1,
            alternative=0.0,
            hypothesis="the 1/sqrt(l) branch scaling leaves the gap unchanged",
            source="derivation (theory section 6): 1/sqrt(l) shrinks every branch, so at init the blocks start "
            "closer to the identity (the opposite of the trained-model claim of 000#50)",
            why=why,
            statement=f"init, L={L}: mean log gap over the deep half, ln_scaling < pre",
            requires_full=True,
            figure="signal_jacobian_gap",
        )


def claim_gradient_profiles(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """NormFormer (000#94) / Mix-LN (000#62), claims about trained models (evaluated on a trained run;
    at initialisation only the scalars are kept): Pre-LN's early layers get larger gradients, Post-LN's
    smaller; Mix-LN's are the most uniform."""
    L = int(max(data.depth.values))
    if L < 8:
        return
    tag = "trained" if cfg.trained else "init"
    q = max(1, L // 4)
    lr, cv = {}, {}
    for norm in [n for n in ("pre", "post", "mix") if n in data.norm.values]:
        g = data["grad_norm"].sel(norm=norm, depth=L).values[:L]  # (layer, param, sample)
        per = np.sqrt(np.nansum(g**2, axis=1))  # (layer, sample)
        lr[norm] = np.log(per[:q].mean(0) / per[-q:].mean(0))  # (sample,)
        cv[norm] = per.std(0) / per.mean(0)
        sc[f"{norm}_grad_first_over_last_quarter_{tag}"] = float(np.exp(lr[norm].mean()))
        sc[f"{norm}_grad_cv_{tag}"] = float(cv[norm].mean())
    if not cfg.trained:
        return
    why = "95% t band over the trained seeds (n seeds) of log(mean grad, first quarter / last quarter)"
    for norm, sign, src, seed in (
        ("pre", 1, "000#94 NormFormer: Pre-LN early-layer gradients exceed late ones", "000#94"),
        ("post", -1, "000#62 Mix-LN: Post-LN gradients vanish in earlier layers", "000#62"),
    ):
        if norm in lr:
            led.direction(
                f"{norm}_early_gradients_{'larger' if sign > 0 else 'smaller'}",
                replicates=_seeds(lr[norm]),
                sign=sign,
                alternative=0.0,
                hypothesis="gradient norms uniform across layers",
                source=src,
                seed=seed,
                why=why,
                statement=f"{norm} (trained), L={L}: log grad(first quarter)/grad(last quarter) "
                f"{'>' if sign > 0 else '<'} 0",
                requires_full=True,
                figure="signal_gradient_profiles",
            )
    if {"pre", "post", "mix"} <= set(cv):
        best = "pre" if cv["pre"].mean() < cv["post"].mean() else "post"
        led.direction(
            "mix_most_uniform_gradients",
            replicates=_seeds(cv["mix"] - cv[best]),  # same seeds: paired
            sign=-1,
            alternative=0.0,
            hypothesis=f"Mix-LN no more uniform than the better of Pre-/Post-LN ({best})",
            source="000#62 Mix-LN: Post-LN early + Pre-LN deep gives more uniform layer gradients",
            seed="000#62",
            why=f"95% t band over the trained seeds (n seeds) of the paired CV(mix) - CV({best}) of per-layer "
            "gradient norms",
            statement=f"mix (trained), L={L}: CV of per-layer gradient norm below {best}'s",
            requires_full=True,
            figure="signal_gradient_profiles",
        )


ROUNDOFF = 1e-16  # float64 round-off of a collapsed stream's residual ratio: logs are taken above it


def _collapse(data: xr.Dataset, variant: str, mask: str) -> np.ndarray:
    """(cpos, sample) residual ratio of a rank-collapse variant."""
    return data["collapse_residual"].sel(variant=variant, mask=mask).values


def _decrement_growth(r: np.ndarray) -> np.ndarray:
    """(sample,) mean log-decrement growth of each initialisation's curve (NaN with too few steps)."""
    return np.array([th.log_decrement_growth(r[:, s])[0] for s in range(r.shape[1])])


def _log10_kept(r: np.ndarray) -> np.ndarray:
    """(sample,) log10 (r_L / r_0), floored at float64 round-off."""
    return np.log10(np.maximum(r[-1], ROUNDOFF) / r[0])


DOUBLY = "exponential collapse (constant log-decrement) or none: no acceleration"


def claim_dong_doubly_exponential(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Dong et al. 2021: pure attention, and attention + MLP without skips, lose rank doubly exponentially
    (r_{l+1} <= c r_l^3); theory section 11: a LayerNorm after each attention changes c, not the cube."""
    if cfg.trained:
        return
    src = {
        "pure_attention": "Dong et al. 2021: pure attention loses rank doubly exponentially",
        "attention_mlp": "Dong et al. 2021: without skips an MLP enters the bound's constant, not its exponent",
        "attention_ln": "derivation (theory section 11): r(LN X)/r(X) -> const, so r_{l+1} <= c' r_l^3 persists",
    }
    for mask in MASKS:
        for variant, source in src.items():
            growth = _seeds(_decrement_growth(_collapse(data, variant, mask)))
            sc[f"{variant}_decrement_growth_{mask}"] = mean_se(growth).mean
            led.direction(
                f"{variant}_doubly_exponential_{mask}",
                replicates=growth,
                sign=1,
                alternative=0.0,
                hypothesis=DOUBLY,
                source=source,
                why="95% t band over the initialisations (n seeds: those with two decrements above round-off) of "
                "each seed's mean log(delta_(l+1)/delta_l) of the log-decrements "
                "delta_l = log(r_l/r_(l+1)) above round-off (log 3 for r -> c r^3 once r is small, 0 for an "
                "exponential)",
                statement=f"{variant} ({mask} mask): the log-decrement grows with depth",
                requires_full=True,
                figure="signal_rank_collapse",
            )


def claim_dong_mlp_slows(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Dong et al. 2021: MLPs (a large Lipschitz constant) slow down rank collapse."""
    if cfg.trained:
        return
    for mask in MASKS:
        pure, mlp = _collapse(data, "pure_attention", mask), _collapse(data, "attention_mlp", mask)
        ok = (pure > 1e-12) & (mlp > 1e-12)  # both above round-off
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.array(
                [
                    np.log10(mlp[ok[:, s], s] / pure[ok[:, s], s]).mean() if ok[:, s].any() else np.nan
                    for s in range(pure.shape[1])
                ]
            )
        per = _seeds(per)
        sc[f"mlp_over_pure_log10_residual_{mask}"] = mean_se(per).mean
        led.direction(
            f"mlp_slows_collapse_{mask}",
            replicates=per,
            sign=1,
            alternative=0.0,
            hypothesis="the MLP does not change the residual ratio",
            source="Dong et al. 2021: MLPs slow down rank "
            "collapse (our skip-free fan-in GELU MLP has gain sqrt(G(q)/q) in [1/2, 1/sqrt 2], theory section 8)",
            why="95% t band over the initialisations (n seeds) of each seed's mean log10 ratio of the residuals, "
            "attention + MLP over pure attention (same weight seed and tokens), over the layers where both are above "
            "round-off",
            statement=f"attention + MLP ({mask} mask): mean log10 residual ratio above pure attention's",
            figure="signal_rank_collapse",
        )


def claim_collapse_prevented(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """Dong et al. 2021 / Noci et al. 2022: skips (with or without Pre-LN) keep the rank that pure attention
    loses, 1/sqrt(L) branch scaling keeps more; a LayerNorm without skips does not (theory section 11)."""
    if cfg.trained:
        return
    for mask in MASKS:
        kept = {v: _log10_kept(_collapse(data, v, mask)) for v in COLLAPSE_VARIANTS}  # (sample,) each
        for v, k_ in kept.items():
            sc[f"{v}_residual_kept_{mask}"] = float(10 ** np.mean(k_))
        rows = (
            (
                "skip_prevents_collapse",
                "skip",
                "pure_attention",
                "Dong et al. 2021: skip connections stop rank collapse",
            ),
            (
                "pre_ln_prevents_collapse",
                "pre_ln",
                "pure_attention",
                "Dong et al. 2021 / Noci et al. 2022: skips with norms (Pre-LN, with MLPs) keep the rank",
            ),
            (
                "branch_scaling_keeps_more_rank",
                "skip_scaled",
                "skip",
                "Noci et al. 2022: scaling the residual branches by 1/sqrt(L) keeps the rank at depth",
            ),
        )
        for name, better, worse, source in rows:
            led.direction(
                f"{name}_{mask}",
                replicates=_seeds(kept[better] - kept[worse]),  # same seeds and tokens: paired
                sign=1,
                alternative=0.0,
                hypothesis=f"{better} keeps no more rank than {worse}",
                source=source,
                why="95% t band over the initialisations (n seeds) of the paired difference of log10(r_L/r_0) "
                "(floored at float64 round-off)",
                statement=f"{better} over {worse} ({mask} mask): log10(r_L/r_0) larger",
                figure="signal_rank_collapse",
            )
        led.direction(
            f"attention_ln_still_collapses_{mask}",
            replicates=_seeds(kept["attention_ln"]),
            sign=-1,
            alternative=0.0,
            hypothesis="the LayerNorm restores the rank: no net loss over the depth",
            source="derivation (theory section 11): a LayerNorm rescales a nearly collapsed stream's residual "
            "by a finite factor and cannot restore the rank lost to averaging",
            why="95% t band over the initialisations (n seeds) of log10(r_L/r_0)",
            statement=f"attention + LayerNorm, no skip ({mask} mask): log10(r_L/r_0) < 0",
            figure="signal_rank_collapse",
        )


def _laplace_se(k: int, n: int) -> float:
    """Standard error of a fraction of ``k`` out of ``n`` from the Laplace estimate ``(k + 1) / (n + 2)``
    (finite at 0 and n, where the plug-in binomial error is 0)."""
    p = (k + 1) / (n + 2)
    return math.sqrt(p * (1 - p) / n)


def stability_outcomes(data: xr.Dataset) -> dict[str, list[str]]:
    """norm -> the classification (theory section 13) of every stability run's loss curve."""
    floor = float(data.attrs["unigram_entropy"])
    margin = th.stall_margin(floor, float(data.attrs["entropy_rate"]))
    return {
        str(n): [
            th.classify_training(data["stab_loss"].sel(stab_norm=n).values[s], floor, margin)
            for s in range(data.sizes["stab_seed"])
        ]
        for n in data.stab_norm.values
    }


def claim_deepnet_stability(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """DeepNet (000#65), trained: at depth, Adam at the probe's rate without warm-up, Post-LN stalls or diverges
    where DeepNorm trains; the first update's size against the Theorem's depth factors (theory sections 10, 13)."""
    if not cfg.trained or "stab_loss" not in data:
        return
    N, S = cfg.stability_depth, data.sizes["stab_seed"]
    floor = float(data.attrs["unigram_entropy"])
    margin = th.stall_margin(floor, float(data.attrs["entropy_rate"]))
    out = stability_outcomes(data)
    final = {n: np.array([th.final_loss(c) for c in data["stab_loss"].sel(stab_norm=n).values]) for n in out}
    failed = {n: sum(o != "trained" for o in out[n]) for n in out}
    for n in out:
        sc[f"{n}_L{N}_no_warmup_failed_fraction"] = failed[n] / S
        sc[f"{n}_L{N}_no_warmup_diverged"] = sum(o == "diverged" for o in out[n])
        sc[f"{n}_L{N}_no_warmup_final_loss"] = float(np.mean(final[n]))
    sc["stability_stall_threshold"] = floor - margin
    rule = (
        f"L = {N}, d = {cfg.d_model}, T = {cfg.seq_len}, {cfg.stability_steps} Adam updates at the probe's rate "
        f"{stability_train_config(cfg).lr:g} without warm-up, {S} seeds"
    )
    cost = f"{S} independent seeds (about 37 s per seed for a Post-LN and a DeepNorm run, one thread)"
    led.direction(
        "deepnet_post_fails_where_deepnorm_trains",
        measured=(failed["post"] - failed["deepnorm"]) / S,
        sign=1,
        se=math.hypot(_laplace_se(failed["post"], S), _laplace_se(failed["deepnorm"], S)),
        dof=S - 1,
        alternative=0.0,
        hypothesis="DeepNorm's alpha, beta change nothing: Post-LN fails as often as DeepNorm",
        source="000#65 Wang et al. 2022 (DeepNet): deep Post-LN diverges or stalls without warm-up, DeepNorm trains",
        why=f"95% t band of the difference of two fractions of {S} runs each: SE the hypot of the two fractions' "
        f"Laplace SEs ((k+1)/(n+2), finite at 0 and n), dof {S} - 1 (the smaller group's n - 1); {cost}; a run "
        "fails when it diverges (non-finite loss, or final loss above the first) or stalls (final loss, the mean "
        "over the last tenth of the steps, not a tenth of the context gap H(pi) - H below the context-free H(pi))",
        seed="000#65",
        statement=f"{rule}: fraction of failed runs, Post-LN minus DeepNorm > 0",
        requires_full=True,
        figure="signal_deepnet_trained",
    )
    gain = _seeds(floor - final["deepnorm"])
    sc["deepnorm_context_gain"] = mean_se(gain).mean
    led.direction(
        "deepnorm_trains_at_depth_without_warmup",
        replicates=gain,
        sign=1,
        alternative=0.0,
        hypothesis="DeepNorm stalls at the context-free loss H(pi) as Post-LN does",
        source="000#65 Wang et al. 2022: DeepNorm trains very deep Post-LN-style stacks stably",
        why="95% t band over the seeds (n seeds) of H(pi) minus the final training loss (mean over the last tenth "
        f"of the steps); {cost}",
        seed="000#65",
        statement=f"deepnorm, {rule}: final loss below the context-free loss H(pi)",
        requires_full=True,
        figure="signal_deepnet_trained",
    )
    led.direction(
        "post_final_loss_above_deepnorm_at_depth",
        replicates=_seeds(final["post"] - final["deepnorm"]),  # same seeds and data stream: paired
        sign=1,
        alternative=0.0,
        hypothesis="the same final loss with and without DeepNorm",
        source="000#65 Wang et al. 2022: Post-LN's instability at depth costs loss that DeepNorm keeps",
        why="95% t band over the seeds (n seeds) of the paired difference of final losses (same weight seed and "
        f"data stream); {cost}",
        seed="000#65",
        statement=f"{rule}: final loss Post-LN minus DeepNorm > 0",
        requires_full=True,
        figure="signal_deepnet_trained",
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        lr_ = np.log(
            data["stab_update"].sel(stab_norm="post").values / data["stab_update"].sel(stab_norm="deepnorm").values
        )
    lr_ = _seeds(lr_)
    ratio = float(th.deepnorm_update_ratio(N, "adam"))
    sc["post_over_deepnorm_first_update"] = float(np.exp(mean_se(lr_).mean))
    sc["post_over_deepnorm_update_bound_ratio"] = ratio
    led.predict(
        "post_over_deepnorm_first_update_at_depth",
        replicates=lr_,
        expected=math.log(ratio),
        alternative=0.0,
        hypothesis="DeepNorm's alpha, beta leave the update unchanged (ratio 1)",
        source="Wang et al. 2022 (DeepNet) Theorem, theory section 10: the Adam update bounds' depth factors "
        "2 sqrt 2 N (Post-LN) and sqrt(2N) (DeepNorm), ratio 2 sqrt N; here at the training rate, where the "
        "one-step claims deepnorm_update_vs_depth_adam / post_update_at_most_linear_adam use a rate 3000x "
        "smaller, and with every parameter moving (the Theorem holds the LayerNorm gains fixed)",
        why="95% t band over the seeds (n seeds) of the paired log(|dx_L| post / |dx_L| deepnorm) after the first "
        f"update, same seed and batch; {cost}",
        seed="000#65",
        statement=f"L = {N}, first Adam update at rate {stability_train_config(cfg).lr:g}: "
        f"log(update post / update deepnorm) = log(2 sqrt N)",
        requires_full=True,
        figure="signal_deepnet_trained",
    )


def claim_curse_of_depth_trained(cfg: Config, data: xr.Dataset, led: Ledger, sc: dict) -> None:
    """GPAS (000#2) / Curse of Depth (000#50), trained: Pre-LN's stream grows faster than linearly over the
    layers; LayerNorm scaling lowers it; removing a deep block costs less than a shallow one, less so with
    LayerNorm scaling (theory section 12 gives the linear alternative)."""
    if not cfg.trained or "curse_resid_var" not in data or "pre" not in data.curse_norm.values:
        return
    L = data.sizes["clayer"]
    if L < 4:
        return
    m_pre = data["curse_resid_var"].sel(curse_norm="pre").values  # (pos, seed)
    C = m_pre.shape[1]
    p = np.array([th.variance_growth_exponent(m_pre[:, s])[0] for s in range(C)])
    sc["pre_variance_growth_exponent_trained"] = mean_se(_seeds(p)).mean
    led.direction(
        "pre_variance_growth_superlinear_trained",
        replicates=_seeds(p),
        sign=1,
        alternative=th.PRE_LN_INIT_GROWTH_EXPONENT,
        hypothesis="linear growth (exponent 1): the sum rule's bounded increment per block, as at initialisation",
        source="000#2 GPAS / 000#50 Curse of Depth: the Pre-LN stream's variance grows faster than linearly "
        "(exponentially) across the layers of trained models",
        why=f"95% t band over the {C} trained seeds of the exponent p of m_l - m_0 ~ l^p (least squares on log-log "
        "per seed, layers 1..L with m_l > m_0, held-out Markov batch)",
        seed="000#2",
        statement=f"pre (trained), L={L}: exponent of the variance increase over layers > 1",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    q = np.array(
        [th.variance_growth_exponent(r)[0] for r in data["curse_sum_rule_init"].sel(curse_norm="pre").values.T]
    )
    sc["pre_variance_growth_exponent_sum_rule_init"] = float(np.nanmean(q))
    led.direction(
        "pre_variance_grows_faster_than_init_sum_rule_trained",
        replicates=_seeds(p - q),  # same seed, same held-out batch: paired
        sign=1,
        alternative=0.0,
        hypothesis="training keeps the initialisation's growth law: the exponent of the sum rule m_0 + sum_l "
        "(a_l + g_l) of the same seed's untrained model (a_l grows with the tokens' correlation, so it exceeds 1)",
        source="000#2 GPAS / 000#50 Curse of Depth: training makes the Pre-LN stream grow faster across layers; "
        "theory sections 1-3 and 12 for the initialisation's law",
        why=f"95% t band over the {C} seeds of the paired difference of exponents (trained model minus the sum rule "
        "of its own initialisation, same held-out batch)",
        seed="000#2",
        statement=f"pre, L={L}: growth exponent of m_l - m_0, trained minus the sum rule at init > 0",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    share_pre = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="pre").values.T])
    sc["pre_deep_ablation_share_trained"] = mean_se(_seeds(share_pre)).mean
    led.direction(
        "pre_deep_blocks_matter_less_trained",
        replicates=_seeds(share_pre),
        sign=-1,
        alternative=0.5,
        hypothesis="every block equally important: the deep half takes half the ablation damage",
        source="000#50 Curse of Depth: removing a deep Pre-LN layer costs much less than removing a shallow one",
        why=f"95% t band over the {C} trained seeds of D / (D + S), D and S the mean held-out loss increase when one "
        "block of the deep half (L/2..L-1), resp. of blocks 1..L/2-1, is removed (its residual contribution zeroed)",
        seed="000#50",
        statement=f"pre (trained), L={L}: deep half's share of the per-block ablation damage < 1/2",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    if "ln_scaling" in data.curse_norm.values:
        _claim_ln_scaling_trained(cfg, data, led, sc, m_pre, share_pre)


CLAIMS = (
    claim_pre_ln_sum_rule,
    claim_peri_ln_linear,
    claim_pre_ln_growth_law,
    claim_post_ln_unit,
    claim_no_norm_growth,
    claim_deepnorm_layer_change,
    claim_deepnorm_update,
    claim_token_correlation,
    claim_last_layer_gradient,
    claim_jacobian_gap,
    claim_gradient_profiles,
    claim_dong_doubly_exponential,
    claim_dong_mlp_slows,
    claim_collapse_prevented,
    claim_deepnet_stability,
    claim_curse_of_depth_trained,
)


def _claim_ln_scaling_trained(
    cfg: Config, data: xr.Dataset, led: Ledger, sc: dict, m_pre: np.ndarray, share_pre: np.ndarray
) -> None:
    """The LayerNorm-scaling half of :func:`claim_curse_of_depth_trained`, paired with Pre-LN's same seeds."""
    L, C = data.sizes["clayer"], m_pre.shape[1]
    m_ls = data["curse_resid_var"].sel(curse_norm="ln_scaling").values
    lr = _seeds(np.log(m_ls[L] / m_pre[L]))  # same seeds and batch: paired
    sc["ln_scaling_over_pre_last_variance_trained"] = float(np.exp(mean_se(lr).mean))
    led.direction(
        "ln_scaling_lowers_last_variance_trained",
        replicates=lr,
        sign=-1,
        alternative=0.0,
        hypothesis="LayerNorm scaling leaves the trained stream's variance unchanged",
        source="000#50 Curse of Depth: LayerNorm scaling (1/sqrt(l) on the norms' output) tames the variance growth",
        why=f"95% t band over the {C} seeds of the paired log(m_L ln_scaling / m_L pre)",
        seed="000#50",
        statement=f"trained, L={L}: last-layer variance, ln_scaling below pre",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    share_ls = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="ln_scaling").values.T])
    sc["ln_scaling_deep_ablation_share_trained"] = float(np.nanmean(share_ls))
    led.direction(
        "ln_scaling_raises_deep_block_share_trained",
        replicates=_seeds(share_ls - share_pre),  # same seeds and batch: paired
        sign=1,
        alternative=0.0,
        hypothesis="LayerNorm scaling leaves the deep blocks' share of the ablation damage unchanged",
        source="000#50 Curse of Depth: with LayerNorm scaling deep layers contribute more (removing them costs more)",
        why=f"95% t band over the {C} seeds of the paired difference of the deep half's share D / (D + S)",
        scale=_curse_scale(cfg),
        seed="000#50",
        statement=f"trained, L={L}: deep half's ablation share, ln_scaling minus pre > 0",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )


def check_claims(result: Result) -> Ledger:
    """The ledger of ``result`` (what :func:`run` records, and what :func:`probes.base.judged` makes again
    for a result from the cache): the zoo sweep's claims; none for a passed model (:func:`run_model` makes
    no claim about it)."""
    led = Ledger(NAME, preset=result.config.preset_name)
    if result.data.attrs.get("source") != "passed model":
        record_claims(result.config, result.data, led)
    return led


def record_claims(cfg: Config, data: xr.Dataset, led: Ledger) -> dict:
    """Record every comparison with theory or a paper in ``led`` (one function per theorem or paper,
    :data:`CLAIMS`); returns the probe's scalars."""
    scalars: dict = {"gelu_second_moment": th.gelu_second_moment(1.0)}
    for claim in CLAIMS:
        claim(cfg, data, led, scalars)
    phase.claims(cfg, data, led, scalars)
    for norm in data.norm.values:
        for L in data.depth.values:
            scalars[f"loss_{norm}_L{L}"] = float(data["loss"].sel(norm=norm, depth=L).mean())
    return scalars


# ================================================================================================
# declared studies: the runs behind notebook 01 (python -m probes study signal_propagation STUDY)
# ================================================================================================

TRAINED_NORMS = ("pre", "post", "mix", "peri", "ln_scaling")  # the placements trained at one depth
TRAINED_REPLICATES = {"smoke": 2, "full": 5}  # independent seeds (the same checkpoints as the curse runs)


def init_base(preset: str, seed: int = 0, d_model: int = 32, heads: int = 4, trained_depth: int = 12) -> Config:
    """The initialisation sweep of notebook 01 (every placement and depth) with the attention phase diagram;
    the parameters are the notebook's parameter cell (``trained_depth`` is the trained study's)."""
    return Config.preset(preset, seed=seed, d_model=d_model, heads=heads, phase=True)


def trained_base(preset: str, seed: int = 0, d_model: int = 32, heads: int = 4, trained_depth: int = 12) -> Config:
    """The trained comparison of notebook 01: the placements of :data:`TRAINED_NORMS` the preset has, trained
    at one depth (``trained_depth``; smoke: 4) over :data:`TRAINED_REPLICATES` independent seeds."""
    if isinstance(trained_depth, bool) or not isinstance(trained_depth, int) or trained_depth < 4:
        raise ValueError(f"trained_depth must be an integer >= 4, got {trained_depth!r}")
    init = Config.preset(preset, seed=seed, d_model=d_model, heads=heads)
    return Config.preset(
        preset,
        seed=seed,
        d_model=d_model,
        heads=heads,
        trained=True,
        norms=tuple(n for n in TRAINED_NORMS if n in init.norms),
        n_samples=TRAINED_REPLICATES[preset],
        depths=(trained_depth if preset == "full" else 4,),
    )


def _single(results: list[Result]) -> Result:
    return results[0]


def _ledger_of(result: Result) -> Ledger:
    return result.ledger


STUDIES = {
    "init": Study(
        name="init",
        description="every norm placement at every depth at initialisation, rank collapse, DeepNorm's update and "
        "the attention phase diagram (one run, its seeds inside; notebook 01 sections 1-5 and 8)",
        base=init_base,
        grid=lambda preset, base: {},
        combine=_single,
        claims=_ledger_of,
    ),
    "trained": Study(
        name="trained",
        description="the placements trained at one depth over independent seeds, with the DeepNet stability and "
        "Curse-of-Depth runs (notebook 01 sections 2, 4, 5-7)",
        base=trained_base,
        grid=lambda preset, base: {},
        combine=_single,
        claims=_ledger_of,
    ),
}
