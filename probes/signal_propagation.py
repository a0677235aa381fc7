"""Activation, gradient and Jacobian statistics across depth for every norm placement; rank collapse.

For each norm placement and depth the probe builds ``n_samples`` TinyTransformers (weight seeds
``seed + i``; trained on a Markov language through the checkpoint cache when ``trained``) and
measures, in float64, on Markov-language token batches:

* ``resid_var`` / ``resid_rms``: second moment per coordinate ``mean(x^2)`` (= variance: the
  coordinates have mean zero over the weight draw) and its square root, after the embedding
  (``pos = 0``) and after every block;
* ``branch_ratio``: mean over tokens of ``|F(x)| / |x|`` for the attention and MLP sublayers;
* ``grad_norm``: Frobenius norm of the gradient of every weight matrix (``W_q .. W_out``) per layer
  under the LM cross-entropy of the batch (next-token targets);
* ``angular_distance``: ``arccos(cos(x_{l-1,t}, x_{l,t})) / pi`` between consecutive streams;
* ``jacobian_identity_gap``: ``|J_l - I|_F / sqrt(d)`` with ``J_l = d x_{l,t} / d x_{l-1,t}`` the
  block's Jacobian at the last position ``t = T - 1`` (other positions held fixed). It is computed
  **exactly**: every block's input is made a separate autograd leaf by a hook, so one backward pass
  per output coordinate (``d`` of them, ``d <= 64``) gives row ``i`` of every block's Jacobian at
  once. At this width the exact matrix costs less than a Hutchinson estimate of useful accuracy
  and has no sampling error, which the comparison with ``m_l^{-1/2}`` needs;
* ``token_cosine`` (mean pairwise cosine of distinct tokens) and ``rank_residual`` (Dong et al.'s
  ``|X - 1 mean(X)|_{1,inf} / |X|_{1,inf}``) per stream position;
* ``attn_moment``: the attention branch's conditional second moment ``a_l`` (theory section 3),
  from the measured pattern and the attention input, for the Pre-LN sum rule.

Separately (at initialisation only), ``update_size``: DeepNorm's model update (theory section 10),
``|x_L(theta + dtheta) - x_L(theta)| / |x_L(theta)|`` of the final stream after one SGD or Adam step on
the fixed loss, for Pre-LN, Post-LN and DeepNorm at every depth; and rank collapse at depth ``collapse_depth`` for pure attention
(no skip, MLP or norm) and for variants that add a LayerNorm after each attention (no skip), skips,
MLPs, Pre-LN or 1/sqrt(L) branch scaling,
under causal and full masks. The theory is :mod:`analysis.theory.signal_propagation`.

* ``mlp_moment`` (no norm only): ``mean_t G(q_mid,t)``, the MLP's conditional second moment
  (theory section 8), for the no-norm sum rule and its exponential growth.

A **passed model** (``run(config, model)``; any token :class:`analysis.protocol.ProbeModel`, causal or
bidirectional, e.g. the Hugging Face adapter) is measured alone with the same statistics on Markov ids
within its vocabulary or on corpus text in its own tokenizer (``data``); see :func:`run_model`.

Model-specific access is limited to hook names and ``named_parameters`` names
(``blocks.{l}.attn.W_q.weight`` ..., or any path with a layer index after ``layers``/``layer``/``h``/``blocks``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr
from scipy import stats
from tqdm.auto import tqdm

from analysis import protocol
from analysis.hooks import hooks, run_with_cache
from analysis.ledger import Ledger
from analysis.model import ATTENTION_KERNELS, ModelConfig, TinyTransformer
from analysis.tasks import MarkovLanguage
from analysis.theory import signal_propagation as th
from probes.base import ProbeConfig, Result, param

NAME = "signal_propagation"
DESCRIPTION = (
    "Residual variance, gradients, block Jacobians and rank collapse across depth for every norm placement."
)
VERSION = "4"
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
UPDATE_SAMPLES = 3  # initialisations per (norm, depth) of the update measurement (it is deterministic)
DATA = ("markov", "corpus")
_PARAM_RE = re.compile(r"^blocks\.(\d+)\.(?:attn|mlp)\.(W_\w+)\.weight$")
LAYER_SEGMENTS = ("layers", "layer", "h", "blocks")  # parameter-path segments followed by the layer index
HIDDEN_LOSS_WIDTH = 16  # k: width of the fixed random projection of the hidden-state loss

JACOBIAN_SEQUENCES = (
    2  # sequences whose last position's block Jacobians are computed (d backward passes each)
)
JACOBIAN_SAMPLES = 2  # initialisations with Jacobians (the costliest statistic); NaN for the others
Z = 4.0  # tolerance of least-squares slopes in standard errors (normal: a correct law fails w.p. ~6e-5)
ALPHA = 1e-3  # two-sided level of the Student-t tolerances of sample means over few initialisations


@dataclass(frozen=True)
class Config(ProbeConfig):
    PRESETS = {
        "smoke": {"norms": ("pre", "post", "peri"), "depths": (1, 2, 4), "n_samples": 2, "seq_len": 8,
                  "batch_size": 4, "collapse_depth": 5, "train_steps": 20},
        "full": {},
    }  # fmt: skip

    norms: tuple[str, ...] = param(
        tuple(NORM_VARIANTS), "norm variants to measure", choices=tuple(NORM_VARIANTS)
    )
    depths: tuple[int, ...] = param((1, 2, 4, 8, 16, 32, 48), "numbers of blocks L", minimum=1, maximum=256)
    d_model: int = param(32, "residual-stream width d", minimum=2, maximum=128)
    heads: int = param(4, "attention heads per layer (must divide d_model)", minimum=1)
    mlp: bool = param(True, "blocks have a GELU MLP of width 4 d")
    attention: str = param("softmax", "attention kernel", choices=ATTENTION_KERNELS)
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
    n_samples: int = param(6, "initialisations (weight seeds seed + i) per (norm, depth)", minimum=2)
    vocab_size: int = param(64, "vocabulary of the Markov language", minimum=2)
    trained: bool = param(False, "measure after training on the Markov language (cached)")
    train_steps: int = param(300, "optimiser updates when trained", minimum=1)
    jacobian: bool = param(True, "exact block Jacobians (d backward passes per batch; the costliest statistic)")
    collapse_depth: int = param(12, "depth of the rank-collapse sweep (at initialisation)", minimum=2)
    seed: int = param(0, "first weight seed; also seeds the token batches", minimum=0)

    def validate(self) -> None:
        super().validate()
        if self.d_model % self.heads:
            raise ValueError(f"heads must divide d_model={self.d_model}, got heads={self.heads}")
        if len(set(self.norms)) != len(self.norms):
            raise ValueError(f"norms must not repeat, got {list(self.norms)}")
        if len(set(self.depths)) != len(self.depths):
            raise ValueError(f"depths must not repeat, got {list(self.depths)}")


# ================================================================================================
# models and data
# ================================================================================================


def model_config(cfg: Config, norm: str, depth: int, seed: int) -> ModelConfig:
    """The float64 TinyTransformer of one (norm variant, depth, weight seed)."""
    return ModelConfig(
        input="tokens", vocab_size=cfg.vocab_size, output="lm", d_model=cfg.d_model, n_layers=depth,
        n_heads=cfg.heads, d_mlp=None if cfg.mlp else 0, attention=cfg.attention, causal=cfg.mask == "causal",
        attn_residual=cfg.skip, mlp_residual=cfg.skip, dtype="float64", seed=seed, **NORM_VARIANTS[norm],
    )  # fmt: skip


def task(cfg: Config) -> MarkovLanguage:
    return MarkovLanguage(vocab_size=cfg.vocab_size, seq_len=cfg.seq_len, seed=cfg.seed)


def train_config(cfg: Config):
    from analysis.train import TrainConfig

    return TrainConfig(steps=cfg.train_steps, batch_size=32, lr=3e-3, warmup_steps=min(30, cfg.train_steps),
                       weight_decay=0.0, seed=cfg.seed)  # fmt: skip


def build(cfg: Config, norm: str, depth: int, seed: int, progress: bool = False) -> TinyTransformer:
    mcfg = model_config(cfg, norm, depth, seed)
    if not cfg.trained:
        return TinyTransformer(mcfg)
    from analysis.train import train

    return train(mcfg, task(cfg), train_config(cfg), cache="default", progress=progress).model


def batch(cfg: Config, sample: int, vocab: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) (B, T) Markov sequences for sample ``sample``: the same for every norm and depth.

    ``vocab`` (a passed model's vocabulary) caps the Markov language at ``min(vocab_size, vocab)`` ids.
    """
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + sample + 17)
    if vocab is None or vocab >= cfg.vocab_size:
        return task(cfg).sample(cfg.batch_size, gen)
    small = MarkovLanguage(vocab_size=vocab, seq_len=cfg.seq_len, seed=cfg.seed)
    return small.sample(cfg.batch_size, gen)


def corpus_batches(cfg: Config, model) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n_samples`` (inputs, targets) (B, T) batches of consecutive, non-overlapping chunks of the corpus
    validation text, encoded with the model's own tokenizer (UTF-8 bytes for byte-level zoo models)."""
    from analysis.corpus import build_corpus

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


def fixed_loss(
    out: torch.Tensor, targets: torch.Tensor, vocab: int | None, seed: int
) -> tuple[torch.Tensor, str]:
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
    return (out @ P.to(out.dtype) - Y.to(out.dtype)).pow(2).mean(), "hidden_projection_mse"


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
    have = set(model.hook_names())
    first = "blocks.0.hook_resid_pre" if "blocks.0.hook_resid_pre" in have else "hook_embed"
    want = [first] + [f"blocks.{l}.{h}" for l in range(L) for h in
                      ("hook_resid_pre", "hook_resid_post", "hook_resid_mid", "hook_attn_out", "hook_mlp_out")]  # fmt: skip
    if pre_like:
        want += [f"blocks.{l}.{h}" for l in range(L) for h in ("attn.hook_pattern", "ln1.hook_normalized")]
    if no_norm:
        want += [f"blocks.{l}.attn.hook_pattern" for l in range(L)]
    names = [n for n in dict.fromkeys(want) if n in have]
    model.zero_grad(set_to_none=True)
    out, c = run_with_cache(model, inputs, names=names)
    loss, _ = fixed_loss(out, targets, protocol.vocab_size(model), seed)
    loss.backward()

    streams = [c[first]] + [c[f"blocks.{l}.hook_resid_post"] for l in range(L)]  # (B, T, d) each
    out_: dict[str, np.ndarray] = {}
    out_["resid_var"] = np.array([x.double().pow(2).mean().item() for x in streams])
    out_["resid_rms"] = np.sqrt(out_["resid_var"])
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
            mid = c.get(f"blocks.{l}.hook_resid_mid", streams[l])
            branch[l, 1] = ratio(f"blocks.{l}.hook_mlp_out", mid)
            if no_norm:
                q_mid = mid.double().pow(2).mean(-1)  # (B, T) per-token second moment
                mlp_moment[l] = float(th.no_norm_mlp_moment(q_mid.numpy()).mean())
    out_["branch_ratio"] = branch
    out_["mlp_moment"] = mlp_moment
    attn = np.full(L, np.nan)
    for l in range(L):
        src = "ln1.hook_normalized" if pre_like else "hook_resid_pre"
        if (pre_like or no_norm) and {f"blocks.{l}.attn.hook_pattern", f"blocks.{l}.{src}"} <= set(c):
            a = th.attention_branch_moment(c[f"blocks.{l}.attn.hook_pattern"], c[f"blocks.{l}.{src}"])
            attn[l] = a.mean().item()
    out_["attn_moment"] = attn
    out_["grad_norm"] = layer_grad_norms(model, L)
    model.zero_grad(set_to_none=True)
    out_["loss"] = np.array(loss.item())
    out_["jacobian_identity_gap"] = (
        jacobian_identity_gaps(model, inputs[:JACOBIAN_SEQUENCES]) if jacobian else np.full(L, np.nan)
    )
    return out_


def jacobian_identity_gaps(model, inputs: torch.Tensor) -> np.ndarray:
    """``|J_l - I|_F / sqrt(d)`` per block at the last position, mean over the batch (exact Jacobians).

    A hook makes every block's input a fresh leaf, so block ``l``'s output depends on its own leaf
    only; backward from ``sum_l sum_b x_{l, b, T-1, i}`` then yields row ``i`` of all blocks' Jacobians.
    NaN when the model lacks the hooks or its hooks cannot replace the stream.
    """
    L = model.n_layers
    have = set(model.hook_names())
    if not all(f"blocks.{l}.{h}" in have for l in range(L) for h in ("hook_resid_pre", "hook_resid_post")):
        return np.full(L, np.nan)
    leaves: list[torch.Tensor] = []

    def detach(x: torch.Tensor, name: str) -> torch.Tensor:
        leaf = x.detach().requires_grad_(True)
        leaves.append(leaf)
        return leaf

    outs: dict[str, torch.Tensor] = {}
    with torch.enable_grad(), hooks(model, [("blocks.*.hook_resid_pre", detach)]):
        _, outs = run_with_cache(model, inputs, names="blocks.*.hook_resid_post", detach=False)
    posts = torch.stack([outs[f"blocks.{l}.hook_resid_post"][:, -1] for l in range(L)])  # (L, B, d)
    L_, B, d = posts.shape
    if len(leaves) != L or not posts.requires_grad:
        return np.full(L, np.nan)
    J = torch.empty(L, B, d, d, dtype=torch.float64)
    for i in range(d):
        try:
            rows = torch.autograd.grad(
                posts[:, :, i].sum(), leaves, retain_graph=i < d - 1, allow_unused=True
            )
        except RuntimeError:  # the replaced stream is not what the blocks read
            return np.full(L, np.nan)
        if any(r is None for r in rows):
            return np.full(L, np.nan)
        for l in range(L):
            J[l, :, i, :] = rows[l][:, -1]  # (B, d): d x_{l,T-1,i} / d x_{l-1,T-1,:}
    eye = torch.eye(d, dtype=torch.float64)
    return ((J - eye).pow(2).sum((-1, -2)).sqrt() / math.sqrt(d)).mean(1).numpy()  # (L,)


def update_size(cfg: Config, norm: str, depth: int, sample: int, optimiser: str) -> float:
    """Relative change of the final residual stream after one optimiser step from initialisation.

    One step of SGD or Adam (learning rate ``UPDATE_LR[optimiser]``) on :func:`fixed_loss` of the
    sample's batch, moving only the sublayers' weight matrices (``W_q .. W_out``): the parameters of
    Wang et al.'s Theorem, which holds the LayerNorm gains fixed (theory section 10). Returns
    ``|x_L(theta + dtheta) - x_L(theta)|_F / |x_L(theta)|_F`` on the same batch (float64, deterministic).
    """
    model = TinyTransformer(model_config(cfg, norm, depth, cfg.seed + sample))
    inputs, targets = batch(cfg, sample)
    name = f"blocks.{depth - 1}.hook_resid_post"
    with torch.no_grad():
        _, c0 = run_with_cache(model, inputs, names=[name])
    params = [p for n, p in model.named_parameters() if _PARAM_RE.match(n)]
    lr = UPDATE_LR[optimiser]
    opt = torch.optim.SGD(params, lr=lr) if optimiser == "sgd" else torch.optim.Adam(params, lr=lr)
    opt.zero_grad(set_to_none=True)
    loss, _ = fixed_loss(model(inputs), targets, cfg.vocab_size, cfg.seed)
    loss.backward()
    opt.step()
    with torch.no_grad():
        _, c1 = run_with_cache(model, inputs, names=[name])
    x0, x1 = c0[name].double(), c1[name].double()  # (B, T, d)
    return float((x1 - x0).norm() / x0.norm())


def collapse_curve(cfg: Config, variant: str, mask: str, sample: int) -> np.ndarray:
    """Rank residual of the stream after the embedding and each block of a collapse variant (L + 1,)."""
    L = cfg.collapse_depth
    overrides = dict(COLLAPSE_VARIANTS[variant])
    if "branch_scale" in overrides:
        overrides["branch_scale"] = 1.0 / math.sqrt(L)
    mcfg = ModelConfig(
        input="tokens", vocab_size=cfg.vocab_size, output="none", d_model=cfg.d_model, n_layers=L,
        n_heads=cfg.heads, attention=cfg.attention, causal=mask == "causal", dtype="float64",
        seed=cfg.seed + sample, **overrides,
    )  # fmt: skip
    inputs, _ = batch(cfg, sample)
    with torch.no_grad():
        _, c = run_with_cache(
            TinyTransformer(mcfg), inputs, names=["blocks.0.hook_resid_pre", "blocks.*.hook_resid_post"]
        )
    streams = [c["blocks.0.hook_resid_pre"]] + [c[f"blocks.{l}.hook_resid_post"] for l in range(L)]
    return np.array([th.rank_residual(x).mean().item() for x in streams])


# ================================================================================================
# the run
# ================================================================================================


POS_FIELDS = ("resid_var", "resid_rms", "resid_rms_min", "token_cosine", "rank_residual")
LAYER_FIELDS = ("angular_distance", "jacobian_identity_gap", "attn_moment", "mlp_moment")


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
    coords = {"norm": norms, "depth": depths, "pos": np.arange(Lmax + 1), "layer": np.arange(Lmax),
              "sample": np.arange(S), "param": list(params), "sublayer": list(SUBLAYERS)}  # fmt: skip
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
    if cfg.data == "corpus":
        if cfg.trained or cfg.vocab_size < 256:
            raise ValueError(
                "data='corpus' in the zoo sweep needs byte-level models (vocab_size >= 256) at "
                f"initialisation (trained=False), got vocab_size={cfg.vocab_size}, trained={cfg.trained}"
            )
        batches = corpus_batches(cfg, build(cfg, norms[0], depths[0], cfg.seed))
    else:
        batches = [batch(cfg, s) for s in range(S)]
    jobs = [(i, n, j, L, s) for i, n in enumerate(norms) for j, L in enumerate(depths) for s in range(S)]
    measured = {}
    for i, norm, j, L, s in tqdm(jobs, desc=NAME, disable=not progress):
        model_ = build(cfg, norm, L, cfg.seed + s, progress=False)
        inputs, targets = batches[s]
        measured[i, j, s] = measure(model_, inputs, targets, mlp=cfg.mlp, pre_like=norm in PRE_LIKE,
                                    jacobian=cfg.jacobian and s < JACOBIAN_SAMPLES, no_norm=norm == "none", seed=cfg.seed)  # fmt: skip
    data = _dataset(norms, depths, S, PARAMS, measured)

    collapse = np.full((len(COLLAPSE_VARIANTS), len(MASKS), cfg.collapse_depth + 1, S), np.nan)
    if not cfg.trained:
        for v, variant in enumerate(COLLAPSE_VARIANTS):
            for k, mask in enumerate(MASKS):
                for s in range(S):
                    collapse[v, k, :, s] = collapse_curve(cfg, variant, mask, s)
    data["collapse_residual"] = xr.DataArray(
        collapse, dims=("variant", "mask", "cpos", "sample"),
        coords={"variant": list(COLLAPSE_VARIANTS), "mask": list(MASKS), "cpos": np.arange(cfg.collapse_depth + 1),
                "sample": np.arange(S)},
    )  # fmt: skip
    SU = min(UPDATE_SAMPLES, S)
    upd = np.full((len(UPDATE_NORMS), len(depths), len(th.OPTIMISERS), SU), np.nan)
    if not cfg.trained:
        for i, norm in enumerate(UPDATE_NORMS):
            for j, L in enumerate(depths):
                for k, opt in enumerate(th.OPTIMISERS):
                    for s in range(SU):
                        upd[i, j, k, s] = update_size(cfg, norm, L, s, opt)
    data["update_size"] = xr.DataArray(
        upd, dims=("update_norm", "depth", "optimiser", "usample"),
        coords={"update_norm": list(UPDATE_NORMS), "depth": depths, "optimiser": list(th.OPTIMISERS),
                "usample": np.arange(SU)},
    )  # fmt: skip
    data.attrs["gelu_second_moment"] = th.gelu_second_moment(1.0)
    data.attrs["trained"] = int(cfg.trained)
    data.attrs["source"] = "zoo"
    led = Ledger(NAME, preset=cfg.preset_name)
    scalars = check_claims(cfg, data, led)
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
    protocol.describe(model)  # a ProbeModel, or a ValueError naming what is missing
    if model.input_kind != "tokens":
        raise ValueError(
            f"signal_propagation needs a token model (input_kind 'tokens'), got {model.input_kind!r}"
        )
    protocol.check_length(model, cfg.seq_len, "seq_len")
    V = protocol.vocab_size(model)
    if cfg.data == "corpus":
        batches = corpus_batches(cfg, model)
    else:
        if V is None:
            raise ValueError("data='markov' needs the model's vocabulary size (analysis.protocol.vocab_size)")
        batches = [batch(cfg, s, vocab=V) for s in range(cfg.n_samples)]
    L = int(model.n_layers)
    mlp = "blocks.0.hook_mlp_out" in set(model.hook_names())
    was_training = bool(getattr(model, "training", False))
    if hasattr(model, "eval"):
        model.eval()  # no dropout: the statistics of the deterministic forward pass
    measured, loss_kind = {}, ""
    try:
        for s, (inputs, targets) in enumerate(tqdm(batches, desc=NAME, disable=not progress)):
            m = measure(
                model, inputs, targets, mlp=mlp, pre_like=False, jacobian=cfg.jacobian and s < JACOBIAN_SAMPLES, seed=cfg.seed
            )
            measured[0, 0, s] = m
        with torch.no_grad():
            out = model(batches[0][0][:1])
        loss_kind = fixed_loss(out, batches[0][1][:1], V, cfg.seed)[1]
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    data = _dataset(["model"], [L], cfg.n_samples, param_names(model), measured)
    data.attrs |= {"source": "passed model", "model_type": type(model).__name__, "causal": int(bool(model.causal)),
                   "data": cfg.data, "loss_kind": loss_kind, "trained": -1}  # fmt: skip
    r = data["rank_residual"].sel(norm="model", depth=L).mean("sample").values  # (L + 1,)
    cos = data["token_cosine"].sel(norm="model", depth=L).mean("sample").values
    scalars = {"n_layers": L, "causal": bool(model.causal), "loss": float(data["loss"].mean()),
               "rank_residual_first": float(r[0]), "rank_residual_last": float(r[-1]),
               "rank_residual_last_over_first": float(r[-1] / r[0]), "rank_residual_min": float(np.min(r)),
               "token_cosine_first": float(cos[0]), "token_cosine_last": float(cos[-1])}  # fmt: skip
    led = Ledger(NAME, preset=cfg.preset_name)
    return Result(probe=NAME, config=cfg, data=data, scalars=scalars, ledger=led)


# ================================================================================================
# claims
# ================================================================================================


def t_factor(n: int) -> float:
    """Student-t quantile for a two-sided level ``ALPHA`` with ``n - 1`` degrees of freedom: with only a
    few initialisations the sample SE is itself uncertain, and a normal 4 SE would be too tight."""
    return float(stats.t.ppf(1 - ALPHA / 2, n - 1))


def _mean_se(v: np.ndarray) -> tuple[float, float]:
    v = np.asarray(v, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def last_layer_grad(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) gradient norm of the last block's MLP read-out (W_out; W_o without MLP)."""
    g = data["grad_norm"].sel(norm=norm)
    p = "W_out" if np.isfinite(g.sel(param="W_out")).any() else "W_o"
    return np.stack([g.sel(depth=L, layer=L - 1, param=p).values for L in data.depth.values])


def final_moment(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) residual second moment after the last block."""
    v = data["resid_var"].sel(norm=norm)
    return np.stack([v.sel(depth=L, pos=L).values for L in data.depth.values])


def check_claims(cfg: Config, data: xr.Dataset, led: Ledger) -> dict:
    """Record every comparison with theory or a paper in ``led``; returns the probe's scalars."""
    scalars: dict = {"gelu_second_moment": th.gelu_second_moment(1.0)}
    norms, depths = list(data.norm.values), list(data.depth.values)
    tag = "trained" if cfg.trained else "init"
    gelu_g = th.gelu_second_moment(1.0) if cfg.mlp else 0.0
    deep = max(depths)
    tk = t_factor(cfg.n_samples)

    # -- residual-variance laws (initialisation only: the derivation uses the random weights) ------------
    if not cfg.trained and cfg.skip:
        for norm in [n for n in norms if n in PRE_LIKE]:
            v = data["resid_var"].sel(norm=norm, depth=deep).values  # (pos, sample)
            a = data["attn_moment"].sel(norm=norm, depth=deep).values[:deep]  # (layer, sample)
            if norm == "ln_scaling":
                g = np.array(
                    [
                        th.gelu_second_moment(th.ln_scaling_factor(k)) if cfg.mlp else 0.0
                        for k in range(1, deep + 1)
                    ]
                )
            else:
                g = np.full(deep, gelu_g)
            pred = np.stack([th.pre_ln_moment(v[0, s], a[:, s], g) for s in range(v.shape[1])], axis=1)
            diff_mean, diff_se = _mean_se(v[deep] - pred[deep])
            pm = float(pred[deep].mean())
            led.close(
                f"{norm}_variance_sum_rule",
                measured=float(v[deep].mean()),
                expected=pm,
                atol=tk * diff_se + 1e-12,
                source="derivation (theory sections 1-3): E m_L = m_0 + sum_l (a_l + E gelu(s_l z)^2)",
                why=f"Student-t ({tk:.3g} SE, two-sided {ALPHA:g}) of the per-initialisation difference measured - predicted over {v.shape[1]} samples",
                statement=f"{norm}, L={deep}: residual second moment = m_0 + sum(a_l + g_l)",
                figure="signal_variance_profiles",
            )
            lower, upper = th.pre_ln_envelope(float(v[0].mean()), deep, cfg.mlp, norm == "ln_scaling")
            led.within(
                f"{norm}_variance_envelope",
                measured=float(v[deep].mean()),
                lo=lower[-1] - tk * _mean_se(v[deep])[1],
                hi=upper[-1] + tk * _mean_se(v[deep])[1],
                source="derivation: attention moment a_l in [0, s_l^2], MLP moment closed form",
                why=f"closed-form envelope widened by Student-t {tk:.3g} SE of the mean over samples",
                statement=f"{norm}, L={deep}: m_0 + L g <= m_L <= m_0 + L (1 + g)",
                figure="signal_variance_profiles",
            )
        if "peri" in norms:
            v = data["resid_var"].sel(norm="peri", depth=deep).values
            pred = np.stack([th.peri_ln_moment(v[0, s], deep, cfg.mlp) for s in range(v.shape[1])], axis=1)
            _, se = _mean_se(v[deep] - pred[deep])
            led.close(
                "peri_variance_linear",
                measured=float(v[deep].mean()),
                expected=float(pred[deep].mean()),
                atol=tk * se + 1e-12,
                source="derivation (theory section 4): Peri-LN E m_L = m_0 + 2L",
                why=f"Student-t {tk:.3g} SE of measured - predicted over samples (cross terms have mean zero)",
                statement=f"peri, L={deep}: m_L = m_0 + {'2' if cfg.mlp else '1'} L",
                figure="signal_variance_profiles",
            )
        if "pre" in norms and len(depths) >= 3 and deep >= 8:
            # GPAS / Curse of Depth: exponential growth. An exponential through the two middle depths
            # predicts m_deep = m_b (m_b / m_a)^((deep - b)/(b - a)); linear growth lands far below.
            v = data["resid_var"].sel(norm="pre")
            a_, b_ = depths[-3], depths[-2]
            ma, mb, md = (float(v.sel(depth=L, pos=L).mean()) for L in (a_, b_, deep))
            expo = mb * (mb / ma) ** ((deep - b_) / (b_ - a_))
            slope, se = th.loglog_slope(
                depths[1:],
                final_moment(data, "pre").mean(1)[1:] - float(v.sel(depth=depths[0], pos=0).mean()),
            )
            scalars["pre_variance_loglog_slope"] = slope
            led.bound(
                "pre_variance_exponential_growth",
                measured=md,
                bound=expo,
                relation=">=",
                source="000#2 GPAS / 000#50 Curse of Depth: Pre-LN variance grows exponentially with depth",
                why="an exponential through the two preceding depths is the paper's law; linear growth falls below it",
                statement=f"pre, init: m_{deep} >= exponential extrapolation from L={a_}, {b_}",
                deviation="at initialisation our fan-in Pre-LN adds a bounded moment per block (theory sections 2-3): "
                f"growth is linear (log-log slope {slope:.2f}); the papers' exponential growth is a trained-model effect",
                figure="signal_variance_profiles",
            )
        if "post" in norms:
            v = data["resid_var"].sel(norm="post")
            worst = max(float(np.nanmax(np.abs(v.sel(depth=L).values[1 : L + 1] - 1.0))) for L in depths)
            led.close(
                "post_variance_unit",
                measured=worst,
                expected=0.0,
                atol=1e-3,
                source="derivation: Post-LN stream is a LayerNorm output, mean x^2 = sigma^2/(sigma^2+eps) per token",
                why="eps/sigma^2 ~ 1e-5 plus float64 round-off; 1e-3 leaves room for tokens with small variance",
                statement="post: |m_l - 1| <= 1e-3 at every block",
                figure="signal_variance_profiles",
            )

    # -- no norm: exponential growth (theory section 8) ----------------------------------------------------
    if not cfg.trained and cfg.skip and "none" in norms:
        v = data["resid_var"].sel(norm="none", depth=deep).values  # (pos, sample)
        a = data["attn_moment"].sel(norm="none", depth=deep).values[:deep]  # (layer, sample)
        gm = data["mlp_moment"].sel(norm="none", depth=deep).values[:deep] if cfg.mlp else np.zeros_like(a)
        pred = v[0] + (a + gm).sum(0)  # (sample,) the conditional sum rule summed over blocks
        _, se = _mean_se(v[deep] - pred)
        led.close(
            "none_variance_sum_rule",
            measured=float(v[deep].mean()),
            expected=float(pred.mean()),
            atol=tk * se + 1e-12,
            source="derivation (theory section 8): E m_L = m_0 + sum_l (a_l + mean_t G(q_mid,t))",
            why=f"Student-t ({tk:.3g} SE) of the per-initialisation difference measured - predicted; each "
            "block's difference has conditional mean zero (a martingale), so the sum does too",
            statement=f"none, L={deep}: m_L = m_0 + sum of measured attention and closed-form MLP moments",
            figure="signal_variance_profiles",
        )
        lower = float(th.no_norm_lower_bound(float(v[0].mean()), deep, cfg.mlp)[-1])
        led.bound(
            "none_variance_lower_bound",
            measured=float(v[deep].mean()),
            bound=lower,
            relation=">=",
            source="derivation (theory section 8): G(q) >= q/4 and a_l >= 0 give E m_L >= (5/4)^L m_0",
            why="rigorous bound on E m_L (linear in the moments); the sample mean is compared without SE "
            "widening, since the exponential growth makes its SE heavy-tailed and a widened bound vacuous",
            statement=f"none, L={deep}: m_L >= (5/4)^L m_0",
            figure="signal_variance_profiles",
        )
        if deep >= 8:
            half = deep // 2
            ls = np.log(v[half : deep + 1].mean(1))  # (deep - half + 1,)
            fit = stats.linregress(np.arange(half, deep + 1), ls)
            kappa = np.nanmean(a[half:] / v[half:deep], axis=1)  # (layer,) a_l / m_l, mean over samples
            lo, hi = (
                th.no_norm_growth_factor(float(kappa.min()), cfg.mlp),
                th.no_norm_growth_factor(float(kappa.max()), cfg.mlp),
            )
            growth = float(np.exp(fit.slope))
            scalars["none_growth_factor_per_block"] = growth
            scalars["none_kappa_deep_mean"] = float(kappa.mean())
            led.within(
                "none_exponential_growth_factor",
                measured=growth,
                lo=lo * math.exp(-Z * fit.stderr),
                hi=hi * math.exp(Z * fit.stderr),
                source="derivation (theory section 8): m_{l+1}/m_l -> (1 + kappa) 3/2, kappa = a_l/m_l",
                why=f"asymptotic factor over the range of the measured kappa in the deep half, widened by {Z:g} SE "
                "of the fitted log-slope",
                statement=f"none, L={deep}: per-block growth factor of m_l in the deep half = (1 + kappa) 3/2",
                requires_full=True,
                figure="signal_variance_profiles",
            )

    # -- DeepNorm: the per-layer change of the stream shrinks as alpha grows (theory section 9) ---------
    big4 = [L for L in depths if L >= 4]
    if not cfg.trained and len(big4) >= 3:
        for norm, expo, src in (
            (
                "deepnorm",
                th.DEEPNORM_ANGLE_EXPONENT,
                "Wang et al. 2022 (DeepNet): alpha = (2L)^(1/4), beta = (8L)^(-1/4) bound the model update",
            ),
            ("post", th.POST_LN_ANGLE_EXPONENT, "derivation (theory section 9) with alpha = beta = 1"),
        ):
            if norm not in norms:
                continue
            ad = np.array(
                [np.nanmean(data["angular_distance"].sel(norm=norm, depth=L).values[:L]) for L in big4]
            )
            slope, se = th.loglog_slope(np.array(big4, float), ad)
            scalars[f"{norm}_angle_vs_depth_exponent"] = slope
            led.close(
                f"{norm}_layer_change_vs_depth",
                measured=slope,
                expected=expo,
                atol=max(Z * se, 0.1),
                source=src,
                why=f"{Z:g} SE of the log-log fit over depths >= 4, at least 0.1 for the GELU and arctan "
                "corrections to the leading order beta^2/alpha",
                statement=f"{norm}, init: mean per-layer angular distance ~ L^{expo:g}",
                requires_full=True,
                figure="signal_deepnorm_update",
            )
        if {"deepnorm", "post"} <= set(norms):
            r = float(np.nanmean(data["angular_distance"].sel(norm="deepnorm", depth=deep).values[:deep])
                      / np.nanmean(data["angular_distance"].sel(norm="post", depth=deep).values[:deep]))  # fmt: skip
            scalars["deepnorm_over_post_layer_change_deepest"] = r
            led.bound(
                "deepnorm_smaller_layer_change_than_post",
                measured=r,
                bound=1.0,
                relation="<",
                source="Wang et al. 2022: DeepNorm bounds the per-layer update that Post-LN lets grow",
                why="ordering of the mean per-layer angular distance at the deepest model",
                statement=f"L={deep}: angle(deepnorm) / angle(post) < 1",
                figure="signal_deepnorm_update",
            )

    # -- DeepNorm's claim: the model update after one step is O(1) in depth (theory section 10) -----------
    ud = [L for L in depths if L >= 2]
    if not cfg.trained and len(ud) >= 3:
        x = np.array(ud, float)
        for opt in th.OPTIMISERS:
            fits = {}
            for norm in UPDATE_NORMS:
                u = data["update_size"].sel(update_norm=norm, optimiser=opt, depth=ud).mean("usample").values
                fits[norm] = th.loglog_slope(x, u)
                scalars[f"{norm}_update_vs_depth_exponent_{opt}"] = fits[norm][0]
                scalars[f"{norm}_update_deepest_{opt}"] = float(u[-1])
            slope, se = fits["deepnorm"]
            expo = th.UPDATE_BOUND_EXPONENT["deepnorm", opt]
            led.close(
                f"deepnorm_update_vs_depth_{opt}",
                measured=slope,
                expected=expo,
                atol=max(Z * se, 0.1),
                source="Wang et al. 2022 (DeepNet) Theorem: with alpha = (2N)^(1/4), beta = (8N)^(-1/4) the "
                "model update is bounded independently of depth; theory section 10 for the factor per optimiser",
                why=f"{Z:g} SE of the log-log fit over depths >= 2, at least 0.1: the Theorem gives the depth "
                "factor of a bound (sum (v^2 + w^2)/alpha^2 = 1 for SGD, sqrt(2N) for Adam), and the "
                "attention-pattern and gradient-norm factors it treats as depth-free carry weak depth trends",
                statement=f"deepnorm, one {opt} step from init: |dx_L|/|x_L| ~ L^{expo:g}",
                requires_full=True,
                figure="signal_deepnorm_step",
            )
            ps, pse = fits["post"]
            margin = Z * math.hypot(se, pse)
            led.bound(
                f"post_update_grows_faster_than_deepnorm_{opt}",
                measured=ps,
                bound=slope + margin,
                relation=">",
                source="Wang et al. 2022: Post-LN accumulates the sublayers' updates (factor 4N for SGD, "
                "2 sqrt 2 N for Adam), which destabilises early training; DeepNorm does not",
                why=f"exponent of Post-LN above DeepNorm's by more than {Z:g} combined SE of the two fits",
                statement=f"one {opt} step from init: update exponent in L, post > deepnorm",
                requires_full=True,
                figure="signal_deepnorm_step",
            )
            led.bound(
                f"post_update_at_most_linear_{opt}",
                measured=ps,
                bound=th.UPDATE_BOUND_EXPONENT["post", opt] + Z * pse,
                relation="<=",
                source="Wang et al. 2022 Theorem with alpha = beta = 1: Post-LN's update bound grows as N",
                why=f"the bound's exponent 1 plus {Z:g} SE of the fit",
                statement=f"post, one {opt} step from init: update exponent in L <= 1",
                requires_full=True,
                deviation=f"our Post-LN update grows faster than the bound's N (exponent {ps:.2f}): the O(N) "
                "takes each sublayer's step |dtheta_i| and the backward factors as depth-free, but at our init "
                "deep Post-LN's per-layer gradients and forward sensitivity grow with depth (not derived here)",
                figure="signal_deepnorm_step",
            )
        if len(depths) >= 2:
            r = float(data["update_size"].sel(update_norm="post", optimiser="sgd", depth=deep).mean()
                      / data["update_size"].sel(update_norm="deepnorm", optimiser="sgd", depth=deep).mean())  # fmt: skip
            scalars["post_over_deepnorm_update_deepest_sgd"] = r

    # -- Noci et al. 2022: token correlation grows with depth in Pre-LN at init -----------------------------
    if not cfg.trained and "pre" in norms and deep >= 4:
        cos = data["token_cosine"].sel(norm="pre", depth=deep).values[: deep + 1]  # (pos, sample)
        grow = cos[deep] - cos[0]
        m_, se_ = _mean_se(grow)
        scalars["pre_token_cosine_growth"] = m_
        scalars["pre_token_cosine_growth_se"] = se_
        scalars["pre_token_cosine_spearman"] = float(
            stats.spearmanr(np.arange(deep + 1), cos.mean(1)).statistic
        )
        led.bound(
            "pre_token_correlation_grows",
            measured=m_,
            bound=0.0,
            relation=">",
            source="Noci et al. 2022: at initialisation the tokens' correlation increases with depth (Pre-LN)",
            why="ordering: mean over initialisations of cos(x_L) - cos(x_0) (its SE is kept as a scalar)",
            requires_full=True,
            statement=f"pre, L={deep}: mean pairwise token cosine after the last block exceeds the embedding's",
            figure="signal_init_vs_trained",
        )

    # -- Xiong et al.: last-layer gradient vs depth -------------------------------------------------------
    big = [L for L in depths if L >= 2]
    if not cfg.trained and len(big) >= 3:
        idx = [depths.index(L) for L in big]
        if "pre" in norms:
            g = last_layer_grad(data, "pre")[idx]  # (depth, sample)
            m = final_moment(data, "pre")[idx]
            slope, se = th.loglog_slope(np.repeat(m.mean(1), 1), g.mean(1))
            slope_L, se_L = th.loglog_slope(np.array(big, float), g.mean(1))
            scalars["pre_last_grad_vs_depth_exponent"] = slope_L
            scalars["pre_last_grad_vs_moment_exponent"] = slope
            led.close(
                "pre_last_grad_vs_moment",
                measured=slope,
                expected=th.PRE_LN_GRADIENT_VS_MOMENT_EXPONENT,
                atol=max(Z * se, 0.1),
                source="Xiong et al. 2020 adapted (theory section 5): grad ~ m_L^(-1/2)",
                why=f"{Z:g} SE of the log-log fit over depths, at least 0.1 for the weak l-dependence of the "
                "attention moment and of the token correlations that the leading-order law ignores",
                statement="pre: log-log slope of last-layer W_out gradient on m_L = -1/2",
                requires_full=True,
                figure="signal_last_layer_gradient",
            )
        if "post" in norms:
            g = last_layer_grad(data, "post")[idx]
            slope, se = th.loglog_slope(np.array(big, float), g.mean(1))
            scalars["post_last_grad_vs_depth_exponent"] = slope
            led.close(
                "post_last_grad_depth_independent",
                measured=slope,
                expected=th.POST_LN_LAST_LAYER_EXPONENT,
                atol=max(Z * se, 0.1),
                source="Xiong et al. 2020: Post-LN last-layer gradient O(1) in L",
                why=f"{Z:g} SE of the fit, at least 0.1 (a depth-independent law against the Pre-LN -1/2)",
                statement="post: last-layer gradient exponent in L = 0",
                requires_full=True,
                deviation="Xiong et al.'s statement is a depth-free upper bound; our last-layer gradient grows weakly "
                "with L (token correlations of deep Post-LN stacks change the read-out's backward signal; not derived here)",
                figure="signal_last_layer_gradient",
            )
            if "pre" in norms:
                ratio = float(
                    last_layer_grad(data, "post")[depths.index(deep)].mean()
                    / last_layer_grad(data, "pre")[depths.index(deep)].mean()
                )
                scalars["post_over_pre_last_grad_deepest"] = ratio
                led.bound(
                    "post_larger_last_grad_than_pre",
                    measured=ratio,
                    bound=1.0,
                    relation=">",
                    source="000#4 Xiong et al.: Post-LN gradients near the output are large, Pre-LN well-behaved",
                    why="the claim is an ordering at the deepest model",
                    statement=f"L={deep}: grad(post)/grad(pre) > 1",
                    requires_full=True,
                    figure="signal_last_layer_gradient",
                )

    # -- Jacobian gap: Pre-LN ~ m_l^(-1/2) at init; Curse of Depth after training -------------------------
    if "pre" in norms and deep >= 4:
        gap = np.nanmean(data["jacobian_identity_gap"].sel(norm="pre", depth=deep).values[:deep], axis=1)
        mom = data["resid_var"].sel(norm="pre", depth=deep).values[:deep].mean(1)  # input moment of block l
        if not cfg.trained and cfg.skip:
            sl = slice(1, None)  # skip block 0, whose input is the raw embedding
            slope, se = th.loglog_slope(mom[sl], gap[sl])
            scalars["pre_jacobian_gap_vs_moment_exponent"] = slope
            led.close(
                "pre_jacobian_gap_vs_moment",
                measured=slope,
                expected=th.PRE_LN_JACOBIAN_VS_MOMENT_EXPONENT,
                atol=max(Z * se, 0.1),
                source="derivation (theory section 6): |J_l - I| ~ m_l^(-1/2)",
                why=f"{Z:g} SE of the log-log fit over layers, at least 0.1 for the ignored l-dependence of attention",
                statement=f"pre, L={deep}: slope of log |J_l - I| on log m_l = -1/2",
                requires_full=True,
                figure="signal_jacobian_gap",
            )
        half = deep // 2
        early, late = float(gap[:half].mean()), float(gap[half:].mean())
        scalars[f"pre_jacobian_gap_late_over_early_{tag}"] = late / early
        led.bound(
            f"pre_deep_blocks_near_identity_{tag}",
            measured=late / early,
            bound=1.0,
            relation="<",
            source="000#50 Curse of Depth: deep Pre-LN blocks' Jacobians approach the identity",
            why="ordering: mean gap of the deeper half below that of the shallower half",
            statement=f"pre ({tag}), L={deep}: gap(deep half) / gap(shallow half) < 1",
            requires_full=True,
            figure="signal_jacobian_gap",
        )
        if "ln_scaling" in norms:
            gs = np.nanmean(
                data["jacobian_identity_gap"].sel(norm="ln_scaling", depth=deep).values[:deep], axis=1
            )
            r = float(gs[half:].mean() / late)
            scalars[f"ln_scaling_over_pre_deep_gap_{tag}"] = r
            led.bound(
                f"ln_scaling_moves_deep_blocks_from_identity_{tag}",
                measured=r,
                bound=1.0,
                relation=">",
                source="000#50 Curse of Depth: LayerNorm scaling makes deep blocks less identity-like",
                why="ordering of the deep-half mean gap, LN scaling against Pre-LN",
                statement=f"{tag}, L={deep}: gap(ln_scaling)/gap(pre) over the deep half > 1",
                requires_full=True,
                deviation=(
                    "not reproduced at tiny scale: after our short training run (width "
                    f"{cfg.d_model}, {cfg.train_steps} steps on an order-1 Markov language) LayerNorm "
                    "scaling still leaves the deep blocks closer to the identity than Pre-LN, as at "
                    "initialisation; the paper measures 130M-1B LLMs trained on billions of tokens, and "
                    "whether longer training or a harder task flips the ordering is not tested here"
                )
                if cfg.trained
                else "at initialisation 1/sqrt(l) shrinks every branch, so the blocks "
                "start even closer to the identity; the paper's claim concerns trained models",
                figure="signal_jacobian_gap",
            )

    # -- gradient profiles: NormFormer / Mix-LN ------------------------------------------------------------
    if deep >= 8:
        prof = {}
        for norm in [n for n in ("pre", "post", "mix") if n in norms]:
            g = data["grad_norm"].sel(norm=norm, depth=deep).values[:deep]  # (layer, param, sample)
            per_layer = np.sqrt(np.nansum(g**2, axis=1)).mean(-1)  # (layer,)
            q = max(1, deep // 4)
            prof[norm] = per_layer
            scalars[f"{norm}_grad_first_over_last_quarter_{tag}"] = float(
                per_layer[:q].mean() / per_layer[-q:].mean()
            )
        if "pre" in prof:
            r = scalars[f"pre_grad_first_over_last_quarter_{tag}"]
            led.bound(
                f"pre_early_gradients_larger_{tag}",
                measured=r,
                bound=1.0,
                relation=">",
                source="000#94 NormFormer / 000#62 Mix-LN: Pre-LN gradients shrink in deeper layers",
                why="ordering of mean per-layer gradient norms, first vs last quarter",
                statement=f"pre ({tag}): grad(first quarter)/grad(last quarter) > 1",
                requires_full=True,
                figure="signal_gradient_profiles",
            )
        if "post" in prof:
            r = scalars[f"post_grad_first_over_last_quarter_{tag}"]
            led.bound(
                f"post_early_gradients_smaller_{tag}",
                measured=r,
                bound=1.0,
                relation="<",
                source="000#62 Mix-LN: Post-LN gradients vanish in earlier layers",
                why="ordering of mean per-layer gradient norms, first vs last quarter",
                statement=f"post ({tag}): grad(first quarter)/grad(last quarter) < 1",
                requires_full=True,
                deviation=None
                if cfg.trained
                else "Mix-LN measures trained LLMs; at initialisation our Post-LN "
                "stack has larger early-layer gradients, like Pre-LN",
                figure="signal_gradient_profiles",
            )
        if {"pre", "post", "mix"} <= set(prof):
            cv = {n: float(p.std() / p.mean()) for n, p in prof.items()}
            for n, v in cv.items():
                scalars[f"{n}_grad_cv_{tag}"] = v
            led.bound(
                f"mix_most_uniform_gradients_{tag}",
                measured=cv["mix"],
                bound=min(cv["pre"], cv["post"]),
                relation="<",
                source="000#62 Mix-LN: Post-LN early + Pre-LN deep gives more uniform layer gradients",
                why="coefficient of variation of per-layer gradient norms across layers, against the best of pre/post",
                statement=f"mix ({tag}): CV of per-layer gradient norm < min(CV pre, CV post)",
                requires_full=True,
                deviation=(
                    "not reproduced at tiny scale: after our short training run (width "
                    f"{cfg.d_model}, {cfg.train_steps} steps on an order-1 Markov language) Mix-LN's "
                    "per-layer gradient norms are not more uniform than the better of Pre-LN and Post-LN; "
                    "the paper measures 70M-7B LLMs, and longer training is not tested here"
                )
                if cfg.trained
                else "at initialisation the Post-LN first quarter of Mix-LN adds "
                "large early-layer gradients on top of the Pre-LN profile; the paper's claim concerns training",
                figure="signal_gradient_profiles",
            )

    # -- rank collapse (Dong et al.) ---------------------------------------------------------------------
    if not cfg.trained:
        col = data["collapse_residual"]
        for mask in MASKS:
            pure = col.sel(variant="pure_attention", mask=mask).mean("sample").values
            growth, n = th.log_decrement_growth(pure)
            scalars[f"pure_attention_decrement_growth_{mask}"] = growth
            scalars[f"pure_attention_final_residual_{mask}"] = float(pure[-1])
            led.bound(
                f"pure_attention_doubly_exponential_{mask}",
                measured=growth,
                bound=0.0,
                relation=">",
                source="Dong et al. 2021: pure attention loses rank doubly exponentially (r_{l+1} <= c r_l^3)",
                why="a super-exponential decay has a growing log-decrement (mean log ratio > 0; log 3 asymptotically); "
                "an exponential has 0",
                statement=f"pure attention ({mask} mask): log-decrement of the residual ratio grows with depth",
                requires_full=True,
                figure="signal_rank_collapse",
            )
            skip = col.sel(variant="skip", mask=mask).mean("sample").values
            r = float(skip[-1] / skip[0])
            scalars[f"skip_residual_kept_{mask}"] = r
            led.bound(
                f"skip_prevents_collapse_{mask}",
                measured=r,
                bound=0.1,
                relation=">=",
                source="Dong et al. 2021: skip connections stop rank collapse",
                why="collapse means orders of magnitude (pure attention reaches float64 round-off); "
                "keeping 10% of the initial residual ratio over the whole depth is no collapse",
                statement=f"attention + skip ({mask} mask): r_L / r_0 >= 0.1",
                figure="signal_rank_collapse",
            )
            # what each addition changes, against pure attention (Dong et al. 2021, section 7)
            mlp_ = col.sel(variant="attention_mlp", mask=mask).mean("sample").values
            growth_mlp, _ = th.log_decrement_growth(mlp_)
            scalars[f"attention_mlp_decrement_growth_{mask}"] = growth_mlp
            led.bound(
                f"attention_mlp_still_collapses_{mask}",
                measured=growth_mlp,
                bound=0.0,
                relation=">",
                source="Dong et al. 2021: attention + MLP without skips still loses rank doubly exponentially "
                "(the MLP's Lipschitz constant enters the constant of the bound, not its exponent)",
                why="as for pure attention: a growing log-decrement is the doubly exponential signature",
                statement=f"attention + MLP, no skip ({mask} mask): log-decrement grows with depth",
                requires_full=True,
                figure="signal_rank_collapse",
            )
            ok = (pure > 1e-12) & (mlp_ > 1e-12)  # above float64 round-off of a collapsed stream
            slow = float(np.mean(np.log10(mlp_[ok] / pure[ok]))) if ok.any() else math.nan
            scalars[f"mlp_over_pure_log10_residual_{mask}"] = slow
            led.bound(
                f"mlp_slows_collapse_{mask}",
                measured=slow,
                bound=0.0,
                relation=">",
                source="Dong et al. 2021: MLPs (large Lipschitz constant) slow down rank collapse",
                why="sign of the mean log10 ratio of the residuals, attention + MLP over pure attention, "
                "over the layers where both are above round-off",
                statement=f"attention + MLP ({mask} mask): residual ratio above pure attention's",
                deviation="at our fan-in init a skip-free GELU MLP shrinks the stream (its gain "
                "sqrt(G(q)/q) is between 1/2 and 1/sqrt 2, theory section 8): its Lipschitz factor is "
                "below 1 and does not slow the collapse; Dong et al.'s remark needs large-Lipschitz MLPs",
                figure="signal_rank_collapse",
            )
            # pure attention + LayerNorm (theory section 11): the norm changes c, not the cubic rate
            ln_ = col.sel(variant="attention_ln", mask=mask).mean("sample").values
            growth_ln, _ = th.log_decrement_growth(ln_)
            scalars[f"attention_ln_decrement_growth_{mask}"] = growth_ln
            scalars[f"attention_ln_final_residual_{mask}"] = float(ln_[-1])
            scalars[f"attention_ln_residual_kept_{mask}"] = float(ln_[-1] / ln_[0])
            ok = (pure > 1e-12) & (ln_ > 1e-12)
            scalars[f"ln_over_pure_log10_residual_{mask}"] = (
                float(np.mean(np.log10(ln_[ok] / pure[ok]))) if ok.any() else math.nan
            )
            led.bound(
                f"attention_ln_still_collapses_{mask}",
                measured=float(ln_[-1] / ln_[0]),
                bound=0.1,
                relation="<",
                source="derivation (theory section 11): a LayerNorm rescales a nearly collapsed stream's "
                "residual by a finite factor and cannot restore the rank lost to averaging",
                why="the complement of the no-collapse criterion used for skips (r_L / r_0 >= 0.1); under a "
                "causal mask the first token sees only itself and collapse is slow, so that case needs the full "
                "preset's depth (as pure attention does: the smoke depth leaves both near 0.1)",
                statement=f"attention + LayerNorm, no skip ({mask} mask): r_L / r_0 < 0.1",
                requires_full=mask == "causal",
                figure="signal_rank_collapse",
            )
            led.bound(
                f"attention_ln_doubly_exponential_{mask}",
                measured=growth_ln,
                bound=0.0,
                relation=">",
                source="derivation (theory section 11): r(LN X) / r(X) -> const, so r_{l+1} <= c' r_l^3 persists",
                why="as for pure attention: a growing log-decrement is the doubly exponential signature",
                statement=f"attention + LayerNorm, no skip ({mask} mask): log-decrement grows with depth",
                requires_full=True,
                figure="signal_rank_collapse",
            )
            for variant in ("pre_ln", "skip_scaled"):
                kept = col.sel(variant=variant, mask=mask).mean("sample").values
                scalars[f"{variant}_residual_kept_{mask}"] = float(kept[-1] / kept[0])
            led.bound(
                f"pre_ln_prevents_collapse_{mask}",
                measured=scalars[f"pre_ln_residual_kept_{mask}"],
                bound=0.1,
                relation=">=",
                source="Dong et al. 2021 / Noci et al. 2022: skip connections (with norms) keep the rank",
                why="as for plain skips: keeping 10% of the initial residual ratio is no collapse",
                statement=f"Pre-LN with MLP ({mask} mask): r_L / r_0 >= 0.1",
                figure="signal_rank_collapse",
            )
            led.bound(
                f"branch_scaling_keeps_more_rank_{mask}",
                measured=scalars[f"skip_scaled_residual_kept_{mask}"],
                bound=r,
                relation=">",
                source="Noci et al. 2022: scaling the residual branches by 1/sqrt(L) prevents rank collapse at depth",
                why="ordering at the same depth and weights: r_L / r_0 with 1/sqrt(L) branches against unscaled skips",
                statement=f"attention + skip ({mask} mask): r_L/r_0 with branches x 1/sqrt(L) > without",
                figure="signal_rank_collapse",
            )
    for norm in norms:
        for L in depths:
            scalars[f"loss_{norm}_L{L}"] = float(data["loss"].sel(norm=norm, depth=L).mean())
    return scalars
