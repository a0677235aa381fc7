"""Representational collapse: near-identical sequences whose last-token states converge; precision; over-squashing.

Protocol (Barbero et al. 2024, "Transformers need glasses!"). For each of ``n_bases`` samples and each
length ``n`` on a log grid ``min_len .. max_len`` build a pair of sequences (:mod:`analysis.tasks`):

``repeat_last``  a random base of ``n`` tokens, and the same base with its last token repeated;
``counting``     ``k = n`` ones then a zero, against ``k + 1`` ones then a zero (a random (one, zero)
                 token pair per sample);
``early_token``  a random base of ``n`` tokens, and a copy with token ``early_position`` replaced.

With ``separator_every > 0`` both members get a separator token (the last id of the vocabulary, never
used elsewhere) after every ``separator_every`` tokens (the paper's mitigation). Both members of a
pair go through the model in one batch (right-padded: the model is causal, so padding after the
read-out position changes nothing), and the final-layer last-token state ``h`` (``hook_resid_post`` of
the last block, before the final norm) is read at each member's own last position.

Measured: ``distance[dtype, n]`` = geometric mean over samples of ``|h_a - h_b|`` with the model run in
each dtype (float64 is always run: the reference); the decay rate ``slope`` = alpha of
``distance ~ n^-alpha`` fitted on the float64 distances over ``[fit_lo, max_len]`` with a percentile
bootstrap over samples (:mod:`analysis.fitting`); the predicted alpha
(:mod:`analysis.theory.representational_collapse`).
Precision: ``resolution = eps(dtype) |h|`` (the Euclidean size of a one-ulp-per-coordinate step, see the
theory module) and ``collapse_n[dtype]``, the first ``n`` from which the float64 distance stays below it;
then, run in that dtype, whether the next-token argmax of the two sequences coincides
(``argmax_equal[dtype, n]``, fraction of samples) and whether the states are bitwise equal
(``identical[dtype, n]``). Weights in a low-precision run are the same float64 draws (or trained float32
weights) rounded to the dtype.

Over-squashing: ``sensitivity[layer, position]`` = ``|d h^l_last / d x_i|_F`` by autograd with respect to
``hook_embed`` (float64 copy of the model, a random base of ``sens_len`` tokens, one backward pass per
layer using a batch of ``d`` copies, one output coordinate each). Beside it the path count of ``L``
uniform layers with identity value maps (theory, a multiple of sqrt(d)) and, for uniform attention
without norm or MLP, the exact Jacobian of the linear stack with the model's own ``W_o W_v``.
``rank_residual[depth]``: Dong et al.'s ratio ``|X - 1 mean X|_{1,inf} / |X|_{1,inf}`` of the float64
states of the longest first sample, depth 0 = the input of block 0.

Depth: ``layer_distance[layer, n]`` (float64, every block's ``hook_resid_post``) and its fitted exponent
per layer against the prediction the one-layer rates give at that depth (theory module, item 6).
Effective float floor: ``divergence[dtype, n]`` = median over samples of ``|(h~_a - h~_b) - (h_a - h_b)|``
(the dtype's pair difference against float64's); its exponent against ``n`` is compared with the
rounding model of the theory module (``n``-independent for random bases, ``a + b sqrt(n)`` for the
coherent counting prefix). A format whose ``eps |h|`` the float64 distance never reaches within
``max_len`` is reported as a bound ("no collapse up to max_len") with the collapse length the fitted
power law extrapolates to.

Passed-in models (any token :class:`analysis.protocol.ProbeModel`, e.g. the Hugging Face adapter): the
model is copied and cast per dtype; token ids are drawn below ``vocab_size(model)`` (the last id is the
separator); sequences longer than ``max_positions(model)`` are refused; only the guaranteed hook names
(``hook_embed``, ``blocks.{l}.hook_resid_pre/post``) are used. A bidirectional model is measured the same
way (padding keys hidden by a ``-inf`` attention bias), but the claims derived for causal softmax
(predicted slopes, depth rates, path counting) are recorded as not evaluated. The positional encoding
of a passed model is taken as learned absolute when it has a position limit, else ``config.pos``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr

from analysis import protocol, tasks
from analysis.devices import model_device, to_numpy
from analysis.evidence import replicate_seed, t_multiple
from analysis.fitting import bootstrap_power_law
from analysis.hooks import resid_names, resolve_names, run_with_cache
from analysis.ledger import Ledger
from analysis.model import DTYPES, ModelConfig, TinyTransformer
from analysis.progress import bar
from analysis.theory import representational_collapse as th
from analysis.theory.signal_propagation import rank_residual
from analysis.train import probe_lm_train_config, train
from probes import _collapse_pairs as pairs
from probes.base import ModelIncompatibleError, ProbeConfig, Result, model_param, param
from probes.studies import Study, designs_ledger

NAME = "representational_collapse"
DESCRIPTION = (
    "Representational collapse: last-token distance of near-identical sequences vs length, precision, over-squashing."
)
VERSION = "7"  # 7: the one band policy (95% Student-t bands, S - 1 dof over the bases)
REQUIRES = {"input": "tokens"}
BIDIRECTIONAL = "bidirectional model: the causal derivation does not apply"

SOURCE = "Barbero et al. 2024, Transformers need glasses! (ANCHORS.md 4)"
LOW_DTYPES = ("float32", "bfloat16", "float16")
# Independent seeds per configuration in the notebook's designs (probes.replicates): every claim's band is the
# seed-to-seed spread. Five in full (the policy's minimum for claims that depend on weights), two in smoke.
REPLICATES = {"smoke": 2, "full": 5}
EXTENSION_FIELDS = ("extend_dtype", "extend_lo", "extend_hi", "extend_lengths", "extend_bases")


@dataclass(frozen=True)
class Config(ProbeConfig):
    PRESETS = {
        "smoke": {
            "max_len": 128,
            "n_lengths": 8,
            "n_bases": 3,
            "d_model": 32,
            "mlp": 64,
            "sens_len": 32,
            "n_boot": 100,
            "fit_lo": 8.0,
            "train_steps": 30,
            "train_seq_len": 64,
            "sens_bases": 3,
        },
        "full": {},
    }

    # --- protocol -------------------------------------------------------------------------------
    family: str = param("repeat_last", "sequence pair family", choices=th.FAMILIES)
    max_len: int = param(1024, "longest n (base length; counting: number of ones k)", minimum=8)
    min_len: int = param(4, "shortest n", minimum=2)
    n_lengths: int = param(16, "lengths on a log grid from min_len to max_len", minimum=3)
    n_bases: int = param(6, "samples (random bases / token pairs) per length; bootstrap over them", minimum=2)
    early_position: int = param(0, "early_token: 0-based position of the changed token", minimum=0)
    separator_every: int = param(0, "insert a separator after every this many tokens (0 = none)", minimum=0)
    dtypes: tuple[str, ...] = param(LOW_DTYPES, "dtypes to run besides the float64 reference", choices=LOW_DTYPES)
    sens_len: int = param(256, "sequence length of the over-squashing sensitivity", minimum=4)
    sensitivity: bool = param(True, "measure the sensitivity (one backward pass per model coordinate and layer)")
    sens_bases: int = param(4, "random bases of the sensitivity (the first/middle ratio's SE is over them)", minimum=2)
    # --- collapse beyond max_len ----------------------------------------------------------------
    extend_dtype: str = param(
        "", "measure this format's collapse on lengths beyond the main grid ('' = not)", choices=("",) + LOW_DTYPES
    )
    extend_lo: float = param(0.5, "extension: shortest length, in units of max_len", minimum=0.01)
    extend_hi: float = param(2.0, "extension: longest length, in units of max_len", minimum=0.02)
    extend_lengths: int = param(5, "extension: lengths on a log grid (like n_lengths)", minimum=3)
    extend_bases: int = param(0, "extension: samples per length (0 = n_bases; else like n_bases, >= 2)", minimum=0)
    # --- model ----------------------------------------------------------------------------------
    layers: int = model_param("layers", 2)
    d_model: int = model_param("d_model", 64)
    heads: int = model_param("heads", 2)
    attention: str = model_param("attention", "softmax", choices=("softmax", "uniform"))
    norm: str = model_param("norm", "pre", choices=("pre", "post", "none"))
    mlp: int = model_param("mlp", 256)
    pos: str = model_param(
        "pos",
        "none",
        "positional encoding (a passed model without a position limit: the one it uses)",
        choices=("none", "rope", "learned"),
    )
    vocab_size: int = model_param(
        "vocab_size", 64, "vocabulary (the last id is the separator; a passed model's own is used)", minimum=4
    )
    # --- training -------------------------------------------------------------------------------
    trained: bool = param(False, "train the model on a Markov language first (analysis.train, cached)")
    train_steps: int = param(400, "optimiser updates when trained", minimum=1)
    train_seq_len: int = param(256, "training context length", minimum=2)
    # --- fit ------------------------------------------------------------------------------------
    fit_lo: float = param(16.0, "first n of the power-law window (last: max_len)", minimum=2.0)
    n_boot: int = param(1000, "bootstrap replicates over samples", minimum=10)
    seed: int = model_param("seed", 0, "weights (model seed), data and bootstrap seeds")

    def validate(self) -> None:
        super().validate()
        if self.min_len >= self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be below max_len ({self.max_len})")
        if not self.min_len <= self.fit_lo <= self.max_len / 2:
            raise ValueError(
                f"fit_lo must lie in [min_len, max_len/2] = [{self.min_len}, {self.max_len / 2}], got {self.fit_lo}"
            )
        if self.family == "early_token" and self.early_position >= self.min_len - 1:
            raise ValueError(f"early_position must be below min_len - 1 = {self.min_len - 1}")
        if self.extend_dtype and not self.extend_hi >= 2 * self.extend_lo:
            raise ValueError(f"extend_hi must be at least 2 extend_lo, got {self.extend_lo}, {self.extend_hi}")
        if self.extend_dtype and self.pos == "learned":
            raise ValueError("extend_dtype needs a model without learned positions (the extension reuses the model)")
        if self.separator_every >= self.max_len:
            raise ValueError(
                f"separator_every must be 0 (none) or below max_len = {self.max_len} (a separator must fall "
                f"inside the sequences), got {self.separator_every}"
            )
        if self.extend_dtype and self.extend_dtype not in self.dtypes:
            raise ValueError(
                f"extend_dtype must be one of dtypes {list(self.dtypes)} (its collapse length is predicted "
                f"from the main run's {self.extend_dtype} resolution), got {self.extend_dtype!r}"
            )
        if self.extend_dtype:  # the extension runs the protocol again on its own grid: the same rules apply
            lo, hi = extension_lengths(self)
            if hi < 8:
                raise ValueError(
                    f"extend_hi * max_len must be >= 8 (the extension's longest length, like max_len), "
                    f"got {self.extend_hi} * {self.max_len} = {hi}"
                )
            if 2 * lo > hi:
                raise ValueError(
                    f"extend_hi must be at least 2 extend_lo once rounded to lengths, got extend_lo * "
                    f"max_len = {lo}, extend_hi * max_len = {hi}"
                )
            if self.family == "early_token" and self.early_position >= lo - 1:
                raise ValueError(
                    f"early_position must be below extend_lo * max_len - 1 = {lo - 1} (the extension's "
                    f"shortest length), got {self.early_position}"
                )
            if self.extend_bases == 1:
                raise ValueError("extend_bases must be 0 (= n_bases) or >= 2, got 1")
        if len(set(self.dtypes)) != len(self.dtypes):
            raise ValueError(f"dtypes must not repeat, got {self.dtypes}")


# ================================================================================================
# Models and data


def extension_lengths(config: Config) -> tuple[int, int]:
    """Shortest and longest length of the ``extend_dtype`` grid: ``extend_lo``, ``extend_hi`` times ``max_len``."""
    return max(2, round(config.extend_lo * config.max_len)), round(config.extend_hi * config.max_len)


def seq_bound(config: Config) -> int:
    """Longest sequence the protocol builds (sets ``max_len`` of learned positions)."""
    n = config.max_len + 2
    return n + ((n - 1) // config.separator_every if config.separator_every else 0)


def model_config(config: Config) -> ModelConfig:
    """The TinyTransformer this config measures (untrained weights from ``seed``), float32: the model fields,
    with learned positions as long as the longest sequence the protocol builds."""
    return config.model_config(
        input="tokens",
        output="lm",
        dtype="float32",
        max_len=max(seq_bound(config), config.sens_len, config.train_seq_len) if config.pos == "learned" else 1024,
    )


def train_config(config: Config):
    return probe_lm_train_config(config.train_steps, config.seed)


def build_models(config: Config, model=None, progress: bool = True) -> tuple[dict, dict]:
    """``({dtype: model}, info)`` for float64 and every requested dtype.

    Untrained own models are built from the config with its ``dtype`` field (the float64 draws rounded);
    a trained or passed-in model is copied and cast (its weights rounded).
    """
    names = ("float64",) + tuple(config.dtypes)
    info: dict = {}
    if model is None and not config.trained:
        cfg = model_config(config)
        return {dt: TinyTransformer(cfg.replace(dtype=dt), device=config.torch_device()).eval() for dt in names}, info
    if model is None:
        task = tasks.MarkovLanguage(vocab_size=config.vocab_size, seq_len=config.train_seq_len, seed=config.seed)
        res = train(model_config(config), task, train_config(config), device=config.torch_device(), progress=progress)
        model = res.model
        info = {"train_loss": res.final_loss, "checkpoint": res.key, "from_cache": res.from_cache}
    else:
        info = {"model": protocol.describe(model)}
        check_length(config, model)
    return {dt: copy.deepcopy(model).to(DTYPES[dt]).eval() for dt in names}, info


def check_length(config: Config, model) -> None:
    """``ValueError`` naming ``max_len`` (and ``sens_len``) if the model's position limit is shorter."""
    limit, n = protocol.max_positions(model), seq_bound(config)
    if limit is not None and n > limit:
        raise ModelIncompatibleError(
            f"max_len={config.max_len} builds sequences of {n} tokens but the model has {limit} positions; "
            f"use max_len <= {config.max_len - (n - limit)}"
        )
    protocol.check_length(model, config.sens_len, "sens_len")


def model_vocab(config: Config, model=None) -> int:
    """Token ids the pairs draw from: ``config.vocab_size`` for own models, else the model's own."""
    v = protocol.vocab_size(model) if model is not None else config.vocab_size
    if not isinstance(v, int) or v < 4:
        raise ModelIncompatibleError(f"the model must embed at least 4 token ids, got vocab_size={v}")
    return v


def model_pos(config: Config, model=None) -> str:
    """Positional encoding the predictions use: ``config.pos`` for own models; a passed model with a
    position limit has learned absolute positions, one without is taken to use ``config.pos``."""
    if model is not None and protocol.max_positions(model) is not None:
        return "learned"
    return config.pos


def lengths(config: Config) -> np.ndarray:
    """The n grid: about ``n_lengths`` integers spaced evenly in ln n (duplicates removed)."""
    return np.unique(np.round(np.geomspace(config.min_len, config.max_len, config.n_lengths)).astype(int))


def draw_samples(config: Config, vocab: int | None = None) -> dict[str, torch.Tensor]:
    """Per sample: a random base of ``max_len`` tokens (prefixes give every n), (one, zero) and a replacement.

    Ids lie in ``[0, vocab - 1)`` (``vocab`` defaults to ``config.vocab_size``; the last id is the separator)."""
    gen = torch.Generator().manual_seed(config.seed + 7919)  # data only
    V = (vocab or config.vocab_size) - 1  # the last id is reserved for separators
    S = config.n_bases
    base = torch.randint(0, V, (S, config.max_len), generator=gen)
    one = torch.randint(0, V, (S,), generator=gen)
    zero = (one + torch.randint(1, V, (S,), generator=gen)) % V  # differs from one
    # early_position is validated against the lengths for early_token only: other families never use it
    pos = config.early_position if config.family == "early_token" else 0
    repl = (base[:, pos] + torch.randint(1, V, (S,), generator=gen)) % V
    return {"base": base, "one": one, "zero": zero, "replacement": repl, "separator": V}


def make_pair(config: Config, samples: dict, s: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two 1-D sequences of sample ``s`` at length ``n`` (separators applied if asked)."""
    if config.family == "repeat_last":
        pair = pairs.repeat_last_pair(samples["base"][s, :n])
    elif config.family == "counting":
        pair = pairs.counting_pair(n, int(samples["one"][s]), int(samples["zero"][s]))
    else:
        pair = pairs.early_token_pair(samples["base"][s, :n], config.early_position, int(samples["replacement"][s]))
    if config.separator_every:
        pair = pairs.apply_to_pair(
            pair, pairs.with_separators, int(samples.get("separator", config.vocab_size - 1)), config.separator_every
        )
    return pair


def _batch(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (B, T) ids and each row's last index (B,)."""
    T = max(len(x) for x in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, : len(x)] = x
    return ids, torch.tensor([len(x) - 1 for x in seqs])


def pad_bias(idx: torch.Tensor, T: int) -> torch.Tensor:
    """(B, 1, 1, T) attention bias, ``-inf`` on the padding keys of each row (after its last index).

    A causal model needs none (the read-out query never sees later keys); a bidirectional one does.
    """
    pad = torch.arange(T)[None, :] > idx[:, None]  # (B, T)
    return torch.zeros(pad.shape, dtype=torch.float64).masked_fill(pad, float("-inf"))[:, None, None, :]


def measure_distances(
    models: dict, config: Config, ns: np.ndarray, progress: bool = True, vocab: int | None = None
) -> dict[str, np.ndarray]:
    """Per dtype, sample and n: ``distance`` |h_a - h_b| (float64 of the dtype's states), ``norm`` (mean |h|),
    ``argmax_equal`` and ``identical`` (bool), ``divergence`` |(h_a - h_b) - (h_a - h_b)_float64|; the float64
    ``layer_distance`` (S, L, N) of every block; plus the float64 ``h0`` inputs of block 0 and final states
    ``hL`` of the pairs (for the exact uniform check): lists over n of (2S, T, d) and (2S, d)."""
    samples = draw_samples(config, vocab)
    ref = models["float64"]
    S, L = config.n_bases, ref.n_layers
    causal = bool(ref.causal)
    dev = model_device(ref)
    first, *resid = resid_names(L, "depth")  # the input of block 0, then every block's output
    last = resid[-1]
    out = {
        dt: {k: np.zeros((S, len(ns))) for k in ("distance", "norm", "argmax_equal", "identical", "divergence")}
        for dt in models
    }
    layer_distance = np.zeros((S, L, len(ns)))
    exact: dict[str, list] = {"h0": [], "last": []}
    for j, n in enumerate(bar(ns, progress=progress, desc="lengths", leave=False)):
        pairs = [make_pair(config, samples, s, int(n)) for s in range(S)]
        ids, idx = _batch([x for p in pairs for x in p])  # rows: a_0, b_0, a_1, b_1, ...
        bias = None if causal else pad_bias(idx, ids.shape[1]).to(dev)
        rows = torch.arange(ids.shape[0])
        diff64 = None
        for dt, model in models.items():
            names = [last] if dt != "float64" else resid + [first]
            kw = {} if bias is None else {"attn_bias": bias.to(DTYPES[dt])}
            with torch.no_grad():
                logits, cache = run_with_cache(model, ids.to(dev), names=names, **kw)
            cache = {k: v.cpu() for k, v in cache.items()}
            h = cache[last][rows, idx].double()  # (2S, d)
            am = logits.cpu()[rows, idx].argmax(-1)  # (2S,)
            ha, hb = h[0::2], h[1::2]
            if dt == "float64":
                diff64 = ha - hb
                for layer, r in enumerate(resid):
                    hl = cache[r][rows, idx]
                    layer_distance[:, layer, j] = (hl[0::2] - hl[1::2]).norm(dim=-1).numpy()
            out[dt]["distance"][:, j] = (ha - hb).norm(dim=-1).numpy()
            out[dt]["divergence"][:, j] = ((ha - hb) - diff64).norm(dim=-1).numpy()
            out[dt]["norm"][:, j] = (0.5 * (ha.norm(dim=-1) + hb.norm(dim=-1))).numpy()
            out[dt]["argmax_equal"][:, j] = (am[0::2] == am[1::2]).numpy()
            out[dt]["identical"][:, j] = (cache[last][rows, idx][0::2] == cache[last][rows, idx][1::2]).all(-1).numpy()
            if dt == "float64":
                exact["h0"].append((cache[first].numpy(), idx.numpy()))
                exact["last"].append(h.numpy())
    return {"per_dtype": out, "exact": exact, "layer_distance": layer_distance}


def sensitivity(model, config: Config, vocab: int | None = None, chunk: int = 64) -> np.ndarray:
    """``|d h^l_last / d x_i|_F`` (B, L, T) by autograd w.r.t. ``hook_embed``, float64 model, ``sens_bases``
    random bases.

    The Frobenius norm needs one backward pass per output coordinate: the batch holds one copy of the
    sequence per coordinate, ``chunk`` coordinates at a time (the squared norms add over chunks).
    """
    gen = torch.Generator().manual_seed(config.seed + 15485863)  # sensitivity bases only
    T = config.sens_len
    seqs = torch.randint(0, (vocab or config.vocab_size) - 1, (config.sens_bases, T), generator=gen)
    dev = model_device(model)
    resid = resid_names(model.n_layers)
    names = ["hook_embed"] + resid
    resolve_names(model, names)
    with torch.no_grad():
        _, cache = run_with_cache(model, seqs[:1].to(dev), names=["hook_embed"])
    d = cache["hook_embed"].shape[-1]
    sq = np.zeros((config.sens_bases, len(resid), T))
    with torch.enable_grad():
        for b, seq in enumerate(seqs):
            for c0 in range(0, d, chunk):
                c1 = min(d, c0 + chunk)
                ids = seq[None].expand(c1 - c0, T).to(dev)  # (c, T): one copy per output coordinate
                _, cache = run_with_cache(model, ids, names=names, detach=False)
                x = cache["hook_embed"]
                pick = torch.eye(d, dtype=x.dtype, device=x.device)[c0:c1]  # (c, d): row picks coordinate c0 + row
                for layer, r in enumerate(resid):
                    y = (cache[r][:, -1, :] * pick).sum()
                    (g,) = torch.autograd.grad(y, x, retain_graph=layer < len(resid) - 1)  # (c, T, d)
                    sq[b, layer] += g.double().pow(2).sum(dim=(0, 2)).cpu().numpy()
    return np.sqrt(sq)


def uniform_matrices(model) -> list[np.ndarray]:
    """``A_l = W_o W_v`` (d, d) per layer (uniform heads share one pattern, so the heads combine)."""
    return [to_numpy(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()) for blk in model.blocks]


# ================================================================================================
# Measurements beyond the distances


def half_window_drift(
    n: np.ndarray, Y: np.ndarray, window: tuple[float, float], n_boot: int, rng: np.random.Generator
) -> tuple[float, float]:
    """``(alpha_upper - alpha_lower, bootstrap SE)``: the exponent fitted on the upper half of ``window``
    (in ``ln n``) minus the lower half's, on the geometric mean over the rows of ``Y`` (samples, n); the
    SE from replicates that draw the rows once for both halves. ``nan`` with fewer than 2 points a half."""
    mid = math.sqrt(window[0] * window[1])
    lower = (n >= window[0]) & (n <= mid)
    upper = (n >= mid) & (n <= window[1])
    if lower.sum() < 2 or upper.sum() < 2 or not np.all(Y > 0):
        return math.nan, math.nan
    logY = np.log(Y)
    draws = rng.integers(0, Y.shape[0], size=(n_boot, Y.shape[0]))
    Z = np.concatenate([logY.mean(0)[None], logY[draws].mean(axis=1)])  # (1 + n_boot, N)

    def alpha(mask):
        x = np.log(n[mask])
        dx = x - x.mean()
        return -(Z[:, mask] - Z[:, mask].mean(1, keepdims=True)) @ dx / (dx @ dx)

    drift = alpha(upper) - alpha(lower)
    return float(drift[0]), float(drift[1:].std(ddof=1))


def measure_extension(config: Config, models: dict, model, vocab: int, progress: bool) -> dict:
    """The collapse of ``extend_dtype`` on lengths ``extend_lo .. extend_hi`` x ``max_len`` (new bases):
    float64 and that format's distances, the resolution, the first collapsed length and the outputs after it."""
    dt = config.extend_dtype
    lo, hi = extension_lengths(config)
    sub = config.replace(
        dtypes=(dt,),
        max_len=hi,
        min_len=lo,
        n_lengths=config.extend_lengths,
        fit_lo=float(lo),
        n_bases=config.extend_bases or config.n_bases,
        sensitivity=False,
        extend_dtype="",
    )
    if model is not None:
        check_length(sub, model)
    ext_models = {"float64": models["float64"]}
    ext_models[dt] = models[dt] if dt in models else build_models(sub.replace(dtypes=(dt,)), model, progress)[0][dt]
    ns = lengths(sub)
    per = measure_distances(ext_models, sub, ns, progress=progress, vocab=vocab)["per_dtype"]
    norm = np.exp(np.log(per["float64"]["norm"]).mean(0))
    dist = np.stack([np.exp(np.log(per[k]["distance"]).mean(0)) for k in ("float64", dt)])
    c = th.collapse_length(ns, dist[0], norm, dt)
    after = ns >= c if math.isfinite(c) else np.zeros(ns.size, bool)
    frac = {k: float(per[dt][k][:, after].mean()) if after.any() else math.nan for k in ("argmax_equal", "identical")}
    return {
        "n": ns,
        "distance": dist,
        "resolution": th.resolution(dt, norm),
        "collapse_n": float(c),
        "grid_ratio": float(np.max(ns[1:] / ns[:-1])),
        **frac,
    }


def uniform_stack_error(m: dict, mats: list[np.ndarray]) -> float:
    """Max over pairs of ``|h_last - linear_stack(h0)|`` / max ``|h_last|``: the network against the exact
    linear stack ``h <- h + M h A^T`` recomputed from the block-0 inputs it saw (pads sit after the read-out
    index; causal: no effect)."""
    worst = 0.0
    for (h0, idx), h_last in zip(m["exact"]["h0"], m["exact"]["last"], strict=True):
        pred = np.stack([th.linear_stack(h0[r, : idx[r] + 1], mats)[-1] for r in range(h0.shape[0])])
        worst = max(worst, float(np.abs(pred - h_last).max() / np.abs(h_last).max()))
    return worst


# ================================================================================================
# The probe


def _gmean(x: np.ndarray) -> np.ndarray:
    """Geometric mean over the first axis (a zero gives 0, without a warning)."""
    with np.errstate(divide="ignore"):
        return np.exp(np.log(x).mean(0))


def fit_rates(
    config: Config, ns: np.ndarray, m: dict, norm: np.ndarray, dts: list[str], pos: str, attention: str
) -> dict:
    """The power laws of the float64 distances: the main fit ``fit`` (``None`` when a distance is 0), one fit
    per layer ``depth_fits`` with its half-window ``drift`` (L, 2) and the predicted ``depth_pred``, and the
    effective float floor ``floor_fits`` (per low dtype, the divergence from float64 against n).

    Every fit has its own bootstrap stream, derived from ``config.seed``."""
    per, L = m["per_dtype"], m["layer_distance"].shape[1]
    D64 = per["float64"]["distance"]  # (S, N)
    rng = np.random.default_rng(config.seed + 104729)
    nf = ns.astype(np.float64)
    window = (config.fit_lo, float(config.max_len))
    fit = None
    if np.all(D64 > 0):
        fit = bootstrap_power_law(nf, D64, window, n_boot=config.n_boot, rng=rng, n_points=len(ns))
    # depth: a fit per layer on its own bootstrap stream (the main fit's stream is unchanged), and the drift of
    # the exponent from the lower to the upper half of the window (a finite-n correction shrinks with n)
    LD = m["layer_distance"]  # (S, L, N)
    depth_fits, drift = [], np.full((L, 2), math.nan)
    for layer in range(L):
        ok = np.all(LD[:, layer] > 0)
        depth_fits.append(
            bootstrap_power_law(
                nf,
                LD[:, layer],
                window,
                n_boot=config.n_boot,
                n_points=len(ns),
                rng=np.random.default_rng([config.seed, 7, layer]),
            )
            if ok
            else None
        )
        drift[layer] = half_window_drift(
            nf, LD[:, layer], window, config.n_boot, np.random.default_rng([config.seed, 13, layer])
        )
    grid = nf[(nf >= window[0]) & (nf <= window[1])]
    depth_pred = th.predicted_depth_slopes(
        config.family, pos, L, grid, config.separator_every > 0, attention, config.early_position
    )
    # effective float floor: exponent of the dtype's divergence from float64 against n, bootstrap over samples
    floor_fits = {}
    for i, dt in enumerate(dts[1:], start=1):
        Dv = per[dt]["divergence"]
        if np.all(Dv[:, nf >= window[0]] > 0):
            floor_fits[dt] = bootstrap_power_law(
                nf,
                Dv / norm,
                window,
                n_boot=config.n_boot,
                n_points=len(ns),
                rng=np.random.default_rng([config.seed, 11, i]),
            )
    return {"fit": fit, "depth_fits": depth_fits, "drift": drift, "depth_pred": depth_pred, "floor_fits": floor_fits}


def precision_measures(ns: np.ndarray, per: dict, dist: np.ndarray, norm: np.ndarray, dts: list[str], fit) -> dict:
    """Per dtype: the measured ``collapse`` length, the ``extrap``olated one of the fitted power law, the
    median ``rel_error`` of the distance against float64's and the median ``divergence`` (dtype, N)."""
    slope = fit.alpha if fit else math.nan
    collapse = np.array([th.collapse_length(ns, dist[0], norm, dt) for dt in dts])
    # where the fitted power law crosses eps |h| (|h| at max_len): the extrapolated collapse length
    # (in logs, capped at e^709 ~ the largest float64: a near-zero slope extrapolates beyond any length)
    extrap = np.array(
        [math.nan]
        + [
            float(np.exp(min(np.log(ns[-1]) + np.log(dist[0, -1] / th.resolution(dt, norm[-1])) / slope, 709.0)))
            if fit and slope > 0
            else math.nan
            for dt in dts[1:]
        ]
    )
    # how far each dtype's distance is from the float64 one (median over samples): ~0 while resolved
    D64 = per["float64"]["distance"]
    rel_error = np.stack([np.median(np.abs(per[dt]["distance"] - D64) / D64, axis=0) for dt in dts])
    divergence = np.stack([np.median(per[dt]["divergence"], axis=0) for dt in dts])
    return {"collapse": collapse, "extrap": extrap, "rel_error": rel_error, "divergence": divergence}


def oversquashing(config: Config, ref, vocab: int, ns: np.ndarray, m: dict, own_model: bool) -> dict:
    """The sensitivity per base ``sens_b`` (B, L, T) and its geometric mean ``sens``, the path count ``path``,
    the rank residual ``rr`` of the longest first sample's float64 states, and for an own uniform linear stack
    the exact ``sens_exact``, ``stack_error`` and ``sens_error`` (else ``None``)."""
    L = ref.n_layers
    B = config.sens_bases
    sens_b = sensitivity(ref, config, vocab) if config.sensitivity else np.full((B, L, config.sens_len), np.nan)
    sens = np.exp(np.log(sens_b).mean(0))  # (L, T) geometric mean over bases
    d_model = int(protocol_width(ref))
    path = th.path_sensitivity(config.sens_len, L) * math.sqrt(d_model)  # A = I: |I|_F = sqrt(d)

    # rank residual of the longest first sample's float64 states (sequence a)
    seq = make_pair(config, draw_samples(config, vocab), 0, int(ns[-1]))[0]
    names = resid_names(L, "depth")
    with torch.no_grad():
        _, cache = run_with_cache(ref, seq[None].to(model_device(ref)), names=names)
    rr = np.array([float(rank_residual(cache[k][0].cpu())) for k in names])

    exact_uniform = config.attention == "uniform" and config.norm == "none" and config.mlp == 0 and own_model
    sens_exact = stack_error = sens_error = None
    if exact_uniform:
        mats = uniform_matrices(ref)
        R = th.linear_stack_sensitivity(config.sens_len, mats)
        sens_exact = np.sqrt((R**2).sum(axis=(1, 2)))
        stack_error = uniform_stack_error(m, mats)
        if config.sensitivity:
            sens_error = float(np.max(np.abs(sens_b[:, -1] - sens_exact) / sens_exact.max()))
    return {
        "sens_b": sens_b,
        "sens": sens,
        "path": path,
        "rr": rr,
        "sens_exact": sens_exact,
        "stack_error": stack_error,
        "sens_error": sens_error,
    }


def build_dataset(
    config: Config,
    ns: np.ndarray,
    dts: list[str],
    L: int,
    m: dict,
    dist: np.ndarray,
    norm: np.ndarray,
    rates: dict,
    prec: dict,
    sq: dict,
    ext: dict | None,
) -> xr.Dataset:
    """The result's arrays (see the module docstring for what each one is)."""
    per = m["per_dtype"]
    fit, depth_fits = rates["fit"], rates["depth_fits"]
    slope_ci = fit.alpha_ci if fit else (math.nan, math.nan)
    data = xr.Dataset(
        {
            "distance": (("dtype", "n"), dist),
            "distance_samples": (("sample", "dtype", "n"), np.stack([per[dt]["distance"] for dt in dts], axis=1)),
            "layer_distance": (("layer", "n"), _gmean(m["layer_distance"])),
            "norm": (("n",), norm),
            "resolution": (("dtype", "n"), np.stack([th.resolution(dt, norm) for dt in dts])),
            "divergence": (("dtype", "n"), prec["divergence"]),
            "argmax_equal": (("dtype", "n"), np.stack([per[dt]["argmax_equal"].mean(0) for dt in dts])),
            "identical": (("dtype", "n"), np.stack([per[dt]["identical"].mean(0) for dt in dts])),
            "rel_error": (("dtype", "n"), prec["rel_error"]),
            "collapse_n": (("dtype",), prec["collapse"]),
            "collapse_n_extrapolated": (("dtype",), prec["extrap"]),
            "slope_ci": (("end",), np.array(slope_ci)),
            "layer_slope": (("layer",), np.array([f.alpha if f else math.nan for f in depth_fits])),
            "layer_slope_se": (("layer",), np.array([(f.alpha_boot_se or 0.0) if f else math.nan for f in depth_fits])),
            "layer_slope_predicted": (("layer",), rates["depth_pred"]),
            "layer_drift": (("layer",), rates["drift"][:, 0]),
            "layer_drift_se": (("layer",), rates["drift"][:, 1]),
            "sensitivity": (("layer", "position"), sq["sens"]),
            "sensitivity_samples": (("sens_base", "layer", "position"), sq["sens_b"]),
            "path_count": (("position",), sq["path"]),
            "rank_residual": (("depth",), sq["rr"]),
        },
        coords={
            "dtype": dts,
            "n": ns,
            "sample": np.arange(config.n_bases),
            "end": ["lo", "hi"],
            "layer": np.arange(1, L + 1),
            "position": np.arange(1, config.sens_len + 1),
            "depth": np.arange(L + 1),
            "sens_base": np.arange(config.sens_bases),
        },
    )
    if sq["sens_exact"] is not None:
        data["sensitivity_exact"] = (("position",), sq["sens_exact"])
    if ext is not None:
        data = data.assign_coords(n_ext=ext["n"], ext_dtype=["float64", config.extend_dtype])
        data["ext_distance"] = (("ext_dtype", "n_ext"), ext["distance"])
        data["ext_resolution"] = (("n_ext",), ext["resolution"])
    return data


def build_scalars(
    config: Config,
    ns: np.ndarray,
    dts: list[str],
    per: dict,
    dist: np.ndarray,
    predicted: float,
    causal: bool,
    rates: dict,
    prec: dict,
    sq: dict,
    ext: dict | None,
    info: dict,
) -> dict:
    """The result's scalars: the fit, the collapse lengths and what the outputs do after them, the floor
    exponents, the over-squashing ratios and checks, the extension's collapse and the training loss."""
    fit = rates["fit"]
    slope_ci = fit.alpha_ci if fit else (math.nan, math.nan)
    sens_b, mid = sq["sens_b"], config.sens_len // 2
    scalars = {
        "slope": fit.alpha if fit else math.nan,
        "slope_ci_lo": slope_ci[0],
        "slope_ci_hi": slope_ci[1],
        "predicted_slope": predicted,
        "slope_se": (fit.alpha_boot_se or 0.0) if fit else math.nan,
        "fit_lo": float(config.fit_lo),
        "fit_hi": float(config.max_len),
        "fit_rms_residual": fit.rms_residual if fit else math.nan,
        "distance_at_max_len": float(dist[0, -1]),
        "sens_first_over_middle": float(np.exp(np.log(sens_b[:, -1, 0] / sens_b[:, -1, mid]).mean())),
        "causal": float(causal),
    }
    if sq["stack_error"] is not None:
        scalars["uniform_stack_error"] = sq["stack_error"]
    if sq["sens_error"] is not None:
        scalars["sensitivity_path_error"] = sq["sens_error"]
    for dt, c, e in zip(dts, prec["collapse"], prec["extrap"], strict=True):
        scalars[f"collapse_n_{dt}"] = float(c)
        if dt != "float64":
            scalars[f"collapse_n_extrapolated_{dt}"] = float(e)
        if dt != "float64" and math.isfinite(c):  # the outputs in that dtype once collapsed (samples x lengths)
            after = ns >= c
            scalars[f"argmax_equal_after_collapse_{dt}"] = float(per[dt]["argmax_equal"][:, after].mean())
            scalars[f"identical_after_collapse_{dt}"] = float(per[dt]["identical"][:, after].mean())
    for dt, f in rates["floor_fits"].items():
        scalars[f"floor_exponent_{dt}"] = -f.alpha  # divergence ~ n^(+beta)
        scalars[f"floor_exponent_se_{dt}"] = f.alpha_boot_se or 0.0
    if ext is not None:
        for k in ("collapse_n", "argmax_equal", "identical", "grid_ratio"):
            scalars[f"ext_{k}"] = ext[k]
    if "train_loss" in info:
        scalars["train_loss"] = float(info["train_loss"])
    return scalars


def run(config: Config, model=None, progress: bool = True) -> Result:
    own_model = model is None
    vocab = model_vocab(config, model)
    pos = model_pos(config, model)
    models, info = build_models(config, model, progress=progress)
    ref = models["float64"]
    L = ref.n_layers
    causal = bool(ref.causal)
    ns = lengths(config)
    m = measure_distances(models, config, ns, progress=progress, vocab=vocab)
    per = m["per_dtype"]
    dts = list(models)
    norm = np.exp(np.log(per["float64"]["norm"]).mean(0))  # (N,) geometric mean |h|
    dist = np.stack([_gmean(per[dt]["distance"]) for dt in dts])  # (dtype, N)
    attention = config.attention if own_model else "softmax"
    predicted = th.predicted_slope(config.family, pos, separators=config.separator_every > 0, attention=attention)
    rates = fit_rates(config, ns, m, norm, dts, pos, attention)
    prec = precision_measures(ns, per, dist, norm, dts, rates["fit"])
    sq = oversquashing(config, ref, vocab, ns, m, own_model)
    ext = measure_extension(config, models, model, vocab, progress) if config.extend_dtype else None

    data = build_dataset(config, ns, dts, L, m, dist, norm, rates, prec, sq, ext)
    scalars = build_scalars(config, ns, dts, per, dist, predicted, causal, rates, prec, sq, ext, info)
    meta = {k: v for k, v in info.items() if k != "train_loss"}
    meta["pos_assumed"] = pos
    meta["own_model"] = own_model
    result = Result(probe=NAME, config=config, data=data, scalars=scalars, meta=meta)
    result.ledger = check_claims(result)
    return result


def collapse_prediction(
    result: Result, dtype: str, grid_ratio: float = 1.0, k: float | None = None
) -> dict[str, float]:
    """Where ``result``'s float64 power law puts the collapse of ``dtype``, with an interval for a measurement.

    Anchored at the run's longest length ``n_a`` (the probe's ``collapse_n_extrapolated``):
    ``n* = n_a (D(n_a) / eps|h(n_a)|)^(1/alpha)``. The interval
    (:func:`analysis.theory.representational_collapse.collapse_interval`) takes ``alpha`` over the fit's
    bootstrap CI, the level ``ln D(n_a)`` within ``k`` standard errors of its mean over the ``S`` samples (``None``:
    the 95% Student-t multiple with ``S - 1`` dof, :func:`analysis.evidence.t_multiple`)
    (``std_s ln D_s(n_a) / sqrt(S)``; counted twice in variance, ``sqrt(2)``, because a second run that measures
    the collapse draws its own samples) and one step ``grid_ratio`` of the measuring run's length grid.
    """
    d, s = result.data, result.scalars
    ln_d = np.log(d["distance_samples"].sel(dtype="float64").values[:, -1])  # (S,)
    log_se = float(ln_d.std(ddof=1) / math.sqrt(ln_d.size)) * math.sqrt(2.0)
    k = t_multiple(ln_d.size - 1) if k is None else k
    ratio = float(d["distance"].sel(dtype="float64")[-1] / d["resolution"].sel(dtype=dtype)[-1])
    n_a = float(d["n"].values[-1])
    lo, hi = th.collapse_interval(n_a, ratio, (s["slope_ci_lo"], s["slope_ci_hi"]), log_se, grid_ratio, k)
    n_star = float(th.extrapolated_collapse(n_a, ratio, s["slope"]))
    return {"n_star": n_star, "lo": lo, "hi": hi, "ratio": ratio, "log_se": log_se, "n_a": n_a}


def protocol_width(model) -> int:
    """Residual width ``d``: the last axis of ``hook_embed`` on a one-token input."""
    with torch.no_grad():
        _, cache = run_with_cache(
            model, torch.zeros(1, 1, dtype=torch.long, device=model_device(model)), names=["hook_embed"]
        )
    return int(cache["hook_embed"].shape[-1])


# ================================================================================================
# Claims: one function per theorem, reading only the result

SEED = "004#81"  # Barbero et al. 2024, Transformers need glasses! (seed catalogue 1.4)


def _one_model(r: Result, over: str = "random bases") -> str:
    """The ``within_run`` reason of a claim about the run's one model: its value is fixed by the weights, and
    the SE is the bootstrap (or spread) over the inputs ``over``."""
    if not r.meta.get("own_model", True):
        who = f"the passed model ({r.meta.get('model', 'given weights')})"
    else:
        who = f"this one model (weight seed {r.config.seed}{', trained' if r.config.trained else ', untrained'})"
    return f"a property of {who}: fixed by its weights; the SE is over its {over}"


def _bases_dof(r: Result) -> int:
    """Degrees of freedom of an SE over the run's ``n_bases`` samples (bootstrap or spread)."""
    return int(r.config.n_bases) - 1


def _band(rs: tuple[Result, ...], values, se: float, dof: int, over: str = "random bases") -> dict:
    """Band arguments of a claim measured once per model: over two or more replicates their values (the
    seed-to-seed spread, :mod:`probes.replicates`); for one run its measurement with the within-run SE ``se``
    (``dof``) over its inputs ``over``."""
    if len(rs) > 1:
        return dict(replicates=[float(v) for v in values])
    return dict(measured=float(values[0]), se=float(se), dof=dof, within_run=_one_model(rs[0], over))


def _why(rs: tuple[Result, ...], one_run: str) -> str:
    """The band's ``why``: the spread over the replicate seeds, or ``one_run`` for a single run."""
    if len(rs) > 1:
        n = len(rs)
        trained = ", each trained by the same recipe" if rs[0].config.trained else ""
        return (
            f"95% t band ({n - 1} dof) of the standard error of the mean over {n} independent seeds (weights, "
            f"samples and bootstrap: analysis.evidence.replicate_seed{trained})"
        )
    return one_run


def _mean_over(rs: tuple[Result, ...], values) -> tuple[float, float]:
    """``(mean, half-width of the 95% t band)`` that :func:`_band` gives ``values`` (the one run: its own)."""
    x = np.asarray(values, dtype=float)
    if x.size == 1:
        return float(x[0]), math.nan
    return float(x.mean()), t_multiple(x.size - 1) * float(x.std(ddof=1) / math.sqrt(x.size))


def _seeds_note(rs: tuple[Result, ...], bad: int) -> str:
    return f" in {bad} of {len(rs)} seeds" if len(rs) > 1 else ""


def check_replicates(results) -> tuple[Result, ...]:
    """``results`` as a tuple of replicates of one design: the same configuration apart from the seed and the
    extension (measured on the first only, :func:`replicate_config`); ``ValueError`` otherwise."""
    rs = tuple(results)
    if not rs:
        raise ValueError("results must hold at least one result")
    ext = {f: getattr(rs[0].config, f) for f in EXTENSION_FIELDS}
    design = rs[0].config.replace(seed=0, **ext)
    for i, r in enumerate(rs[1:], start=1):
        if r.probe != NAME or r.config.replace(seed=0, **ext) != design:
            raise ValueError(f"results[{i}] is not a replicate of results[0] (configs differ beyond seed, extension)")
    if len({r.config.seed for r in rs}) != len(rs):
        raise ValueError("results must have distinct seeds (independent replicates)")
    return rs


def replicate_config(config: Config, index: int) -> Config:
    """Replicate ``index`` of ``config`` (:mod:`probes.replicates`): its own seed; the extension beyond
    ``max_len`` is measured on replicate 0 only (its claim checks that model's collapse against its own fit)."""
    default = Config()
    ext = {f: getattr(default, f) for f in EXTENSION_FIELDS}
    return config.replace(seed=replicate_seed(config.seed, index), **ext)


def check_claims(result: Result) -> Ledger:
    """The ledger of ``result`` alone: every claim below, its band the within-run SE of its one model."""
    return check_claims_over((result,))


def check_claims_over(results) -> Ledger:
    """The ledger of replicates of one design (:mod:`probes.replicates`): each claim measured on every
    replicate, its band the spread over the seeds (with one result: :func:`check_claims`)."""
    rs = check_replicates(results)
    led = Ledger(NAME, preset=rs[0].config.preset_name)
    claim_exact_uniform(led, rs)
    claim_rate(led, rs)
    claim_learned_positions(led, rs)
    claim_sensitivity(led, rs)
    for dt in rs[0].data["dtype"].values[1:]:
        claim_floor(led, rs, str(dt))
        claim_unresolved(led, rs, str(dt))
    claim_collapse_length(led, rs[0])
    return led


def rate_alternative(config: Config, pos: str, attention: str, L: int) -> tuple[float, str]:
    """The competing decay law for the distance at depth ``L`` (an exponent and its hypothesis)."""
    if config.family == "counting" and config.separator_every:
        return 2.0, "separators change nothing: the counting rate k^-2 of one repeated prefix state"
    if config.family == "counting":
        return 1.0, "the added '1' moves the mean by O(1/k) as in the repeat family: k^-1"
    if config.family == "repeat_last" and pos == "rope":
        return (
            (0.5, "RoPE's shifted offsets dominate as under softmax: n^-1/2")
            if attention == "uniform"
            else (1.0, "RoPE leaves the position-free rate n^-1")
        )
    if config.family == "repeat_last":
        return 2.0, "the counting family's rate n^-2"
    if L >= 2:
        return 1.0, "no relay through depth: the one-layer rate n^-1 at every depth"
    return 0.0, "no decay: an early token keeps its influence on the last position"


def claim_exact_uniform(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Uniform attention without norm or MLP is exactly the linear stack (theory module, items 4, 5): on
    every replicate (the worst error is recorded)."""
    r = rs[0]
    s, config, L = r.scalars, r.config, int(r.data["layer"].size)
    if "uniform_stack_error" not in s:
        return
    T = int(r.data["n"].values[-1]) + 2
    tol = 8.0 * L * max(T, config.sens_len) * math.sqrt(config.d_model) * th.EPS["float64"]
    why = "float64 summation error of T-term running means and d-term products over L layers (8 L T sqrt(d) eps)"
    every = f" (worst of {len(rs)} seeds)" if len(rs) > 1 else ""
    led.identity(
        "uniform_equals_linear_stack",
        measured=max(x.scalars["uniform_stack_error"] for x in rs),
        atol=tol,
        why=why,
        source="derivation: uniform attention without norm or MLP is exactly linear (theory module, item 5)",
        statement=f"network last-token states == exact linear stack (max abs error / max |h|){every}",
        figure="rc_distance",
    )
    if not config.sensitivity:
        led.not_evaluated(
            "sensitivity_equals_path_sum",
            role="identity",
            source="derivation (theory module, item 4)",
            reason="sensitivity=False: not measured",
        )
        return
    led.identity(
        "sensitivity_equals_path_sum",
        measured=max(x.scalars["sensitivity_path_error"] for x in rs),
        atol=tol,
        why=why,
        source="derivation: backward path recursion of the linear stack (theory module, item 4)",
        statement=f"autograd |dh_last/dx_i|_F == exact path sum with the model's W_o W_v, every i and base{every}",
        figure="rc_sensitivity",
    )


def _slope_claim(
    led: Ledger, rs: tuple[Result, ...], name: str, layer: int, alt: tuple[float, str], requires_full: bool
) -> None:
    """The fitted exponent at ``layer`` against the predicted one, and where it misses, the drift of the
    exponent across the window that diagnoses a finite-n correction."""
    r = rs[0]
    d, config = r.data, r.config
    sel = {"layer": layer}
    measured = [float(x.data["layer_slope"].sel(sel)) for x in rs]
    want = float(d["layer_slope_predicted"].sel(sel))
    drift = [float(x.data["layer_drift"].sel(sel)) for x in rs]
    if bad := sum(not math.isfinite(m) for m in measured):
        led.not_evaluated(
            name,
            role="prediction",
            source=SOURCE,
            seed=SEED,
            reason=f"a zero distance at layer {layer}{_seeds_note(rs, bad)} (bitwise-equal float64 states): no "
            "power law to fit",
        )
        return
    dof = _bases_dof(r)
    mean, half = _mean_over(rs, measured)
    if len(rs) == 1:
        half = t_multiple(dof) * float(d["layer_slope_se"].sel(sel))
    diag = f"{name}_drifts_toward_prediction"
    if abs(mean - want) > half and all(math.isfinite(x) for x in drift):
        led.direction(
            diag,
            sign=1 if want > mean else -1,
            **_band(rs, drift, float(d["layer_drift_se"].sel(sel)), dof, "bases (one draw of them for both halves)"),
            seed=SEED,
            hypothesis="a constant exponent across the window: the miss is not a finite-n transient",
            source="derivation: the expansions' next order decays with n (theory module, items 1-3)",
            why=_why(
                rs,
                "95% t band (n_bases - 1 dof) of the bootstrap SE of the difference (one draw of the samples for "
                "both halves)",
            ),
            requires_full=requires_full,
            figure="rc_depth",
            statement=f"layer {layer}: the exponent fitted on the window's upper half is nearer the "
            f"prediction {want:.3g} than the lower half's (upper - lower, toward it)",
        )
    where = (
        f"{config.family} (pos {r.meta.get('pos_assumed')}, sep {config.separator_every}), layer {layer}: "
        f"decay exponent of the float64 pair distance = {want:.3g}"
    )
    led.predict(
        name,
        expected=want,
        **_band(rs, measured, float(d["layer_slope_se"].sel(sel)), dof),
        alternative=alt[0],
        hypothesis=alt[1],
        source=f"{SOURCE}; derivation (theory module, items 1-3, 6, 7)",
        seed=SEED,
        why=_why(rs, "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent (resampling the bases)"),
        requires_full=requires_full,
        statement=where,
        figure="rc_depth" if layer == 1 else "rc_distance",
        diagnosed_by={diag: "pass"} if diag in led else None,
        diagnosis="the exponent moves toward the prediction as n grows: the window is pre-asymptotic"
        if diag in led
        else "",
    )


def claim_rate(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Barbero et al.: the last-token distance decays as a power of n, at the predicted rate at every depth."""
    r = rs[0]
    config, s, L = r.config, r.scalars, int(r.data["layer"].size)
    names = ["slope_matches_prediction"] + (["slope_layer1"] if L >= 2 else [])
    if not s["causal"]:
        for name in names:
            led.not_evaluated(
                name, role="prediction", source=f"{SOURCE}; derivation (theory module)", reason=BIDIRECTIONAL, seed=SEED
            )
        return
    if not math.isfinite(s["predicted_slope"]):
        return  # learned positions: claim_learned_positions
    own = r.meta.get("own_model", True)
    attention = config.attention if own else "softmax"
    pos = r.meta.get("pos_assumed", config.pos)
    requires_full = config.attention != "uniform" or not own  # the softmax rates are asymptotic: the long window
    _slope_claim(led, rs, names[0], L, rate_alternative(config, pos, attention, L), requires_full)
    if L >= 2:
        _slope_claim(led, rs, names[1], 1, rate_alternative(config, pos, attention, 1), requires_full)


def claim_learned_positions(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Learned absolute positions: the read-out position differs between the two sequences: no decay."""
    r = rs[0]
    config, s = r.config, r.scalars
    pos = r.meta.get("pos_assumed", config.pos)
    slopes = [x.scalars["slope"] for x in rs]
    if not (s["causal"] and pos == "learned" and config.family != "early_token"):
        return
    if not all(math.isfinite(v) for v in slopes):
        return
    free = th.predicted_slope(config.family, "none", config.separator_every > 0, config.attention)
    led.predict(
        "learned_positions_no_collapse",
        expected=0.0,
        **_band(rs, slopes, s["slope_se"], _bases_dof(r)),
        alternative=free,
        hypothesis=f"positions do not matter: the position-free rate {free:g}",
        source="derivation: the read-out position differs between the two sequences (theory module, item 2)",
        why=_why(rs, "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent (resampling the bases)"),
        seed=SEED,
        requires_full=config.trained or not r.meta.get("own_model", True),
        statement=f"{config.family} with learned absolute positions: the distance does not decay (alpha = 0)",
        figure="rc_pos",
    )


def _sensitivity_ratio(r: Result) -> np.ndarray:
    """Per sensitivity base: ln(|dh_last/dx_1| / |dh_last/dx_(T/2)|) at the last layer."""
    S = r.data["sensitivity_samples"].sel(layer=int(r.data["layer"].size)).values  # (bases, T)
    return np.log(S[:, 0] / S[:, r.config.sens_len // 2])


def claim_sensitivity(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Over-squashing by path counting: with L >= 2 early tokens have more paths to the last position, so
    the last state is more sensitive to the first token than to a middle one (theory module, item 4)."""
    r = rs[0]
    config, L = r.config, int(r.data["layer"].size)
    name, source = "sensitivity_first_exceeds_middle", f"{SOURCE}; path counting (theory module, item 4)"
    if L < 2:
        return
    if not r.scalars["causal"] or not config.sensitivity:
        reason = BIDIRECTIONAL if not r.scalars["causal"] else "sensitivity=False: not measured"
        led.not_evaluated(name, role="prediction", source=source, reason=reason, seed=SEED)
        return
    xs = [_sensitivity_ratio(x) for x in rs]
    x = xs[0]
    floor = 64 * th.EPS["float64"]  # a linear stack's profile is input-independent: bases agree to rounding
    se = max(float(x.std(ddof=1) / math.sqrt(x.size)), floor)
    led.direction(
        name,
        sign=1,
        **_band(rs, [v.mean() for v in xs], se, x.size - 1, "sensitivity bases"),
        hypothesis="no position preference: a flat profile, as for one layer (ln ratio 0)",
        source=source,
        seed=SEED,
        figure="rc_sensitivity",
        why=_why(
            rs,
            f"95% t band ({x.size - 1} dof) of the standard error of the mean over {x.size} random bases (at "
            "least 64 eps64: the uniform linear stack's profile does not depend on the base, its spread is rounding)",
        ),
        statement="ln(|dh_last/dx_1| / |dh_last/dx_(T/2)|) > 0 at the last layer (mean over bases"
        + (" and seeds)" if len(rs) > 1 else ")"),
    )


def claim_floor(led: Ledger, rs: tuple[Result, ...], dt: str) -> None:
    """The effective float32 floor (rounding model of the theory module): the dtype's pair difference
    against float64's is n-independent for random bases and grows (a + b sqrt(n)) for the coherent counting prefix."""
    r = rs[0]
    s, config = r.scalars, r.config
    if dt != "float32" or f"floor_exponent_{dt}" not in s:
        return  # coarser formats collapse inside the window
    betas = [x.scalars[f"floor_exponent_{dt}"] for x in rs]
    source = "derivation: probabilistic rounding of n-term attention sums (theory module, precision)"
    why = _why(
        rs,
        "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent of "
        "|(h_a - h_b) - (h_a - h_b)_64| / |h| against n",
    )
    band = _band(rs, betas, s[f"floor_exponent_se_{dt}"], _bases_dof(r))
    if config.family == "counting":  # with separators the prefix is two-state: still coherent
        led.direction(
            f"floor_{dt}_exponent",
            sign=1,
            **band,
            source=source,
            why=why,
            hypothesis="independent roundings: an n-independent floor (beta = 0)",
            figure="rc_depth",
            statement=f"{dt}, coherent counting prefix: the floor grows with n (a + b sqrt(n): beta > 0)",
        )
        return
    led.predict(
        f"floor_{dt}_exponent",
        expected=0.0,
        **band,
        alternative=0.5,
        hypothesis="coherent roundings as for the counting prefix: a + b sqrt(n), local beta up to 1/2",
        source=source,
        why=why,
        figure="rc_depth",
        statement=f"{dt}, random bases: the floor is n-independent (beta = 0)",
    )


def _unresolved_shift(r: Result, dt: str) -> np.ndarray | None:
    """Per sample: mean ln relative error of ``dt`` against float64 at n >= collapse_n minus at n < collapse_n
    (``None`` without a collapse inside the window, or with no resolved length before it)."""
    d = r.data
    c = float(d["collapse_n"].sel(dtype=dt))
    after = d["n"].values >= c
    if not math.isfinite(c) or after.all():
        return None
    D = d["distance_samples"]
    err = np.abs(D.sel(dtype=dt).values - D.sel(dtype="float64").values) / D.sel(dtype="float64").values
    le = np.log(np.maximum(err, 1e-300))  # (samples, n); an exact match counts as a tiny error
    return le[:, after].mean(1) - le[:, ~after].mean(1)


def claim_unresolved(led: Ledger, rs: tuple[Result, ...], dt: str) -> None:
    """Barbero et al.: below the format's resolution eps|h| the format no longer resolves the pair: its
    distance stops tracking float64's (relative error after the crossing above the error before it)."""
    d = rs[0].data
    name = f"collapse_{dt}_unresolved"
    n = d["n"].values
    collapse = [float(x.data["collapse_n"].sel(dtype=dt)) for x in rs]
    if bad := sum(not math.isfinite(c) for c in collapse):
        ratio = float(d["distance"].sel(dtype="float64")[-1] / d["resolution"].sel(dtype=dt)[-1])
        n_star = float(d["collapse_n_extrapolated"].sel(dtype=dt))
        led.not_evaluated(
            name,
            role="prediction",
            source=SOURCE,
            seed=SEED,
            figure="rc_precision",
            reason=f"no collapse in {dt} up to n = {int(n[-1])}{_seeds_note(rs, bad)}: the float64 distance there "
            f"is {ratio:.3g} eps|h|; the fitted power law puts the crossing at n ~ {n_star:.3g}"
            + (" (first seed)" if len(rs) > 1 else ""),
        )
        return
    shifts = [_unresolved_shift(x, dt) for x in rs]
    if bad := sum(x is None for x in shifts):
        led.not_evaluated(
            name,
            role="prediction",
            source=SOURCE,
            seed=SEED,
            reason=f"collapsed from the shortest length on{_seeds_note(rs, bad)}: no resolved length to compare with",
        )
        return
    x = shifts[0]
    led.direction(
        name,
        sign=1,
        **_band(rs, [v.mean() for v in shifts], float(x.std(ddof=1) / math.sqrt(x.size)), x.size - 1, "samples"),
        hypothesis="the format resolves the pair past eps|h| as before it (no change of relative error)",
        source=SOURCE,
        seed=SEED,
        figure="rc_precision",
        why=_why(
            rs, f"95% t band ({x.size - 1} dof) of the standard error of the mean over samples of the per-sample shift"
        ),
        statement=f"{dt}: mean ln(|D_{dt} - D_64| / D_64) over n >= collapse_n minus over n < collapse_n is positive",
    )


def claim_collapse_length(led: Ledger, r: Result) -> None:
    """Barbero et al. with the float64 power law: the format collapses where the fitted law meets eps|h|,
    measured on the extension beyond max_len against the interval the main fit predicts."""
    config, s = r.config, r.scalars
    dt = config.extend_dtype
    if not dt:
        return
    name, source = f"collapse_length_{dt}", f"{SOURCE}; the main run's float64 power law (collapse_prediction)"
    if not s["causal"] or not math.isfinite(s["slope_ci_lo"]) or s["slope_ci_lo"] <= 0:
        led.not_evaluated(
            name,
            role="prediction",
            source=source,
            seed=SEED,
            reason="no decaying power law: the slope CI reaches 0 (or the model is bidirectional)",
        )
        return
    p = collapse_prediction(r, dt, grid_ratio=s["ext_grid_ratio"])
    own = r.meta.get("own_model", True)
    alt_slope, alt_h = rate_alternative(
        config, r.meta.get("pos_assumed", config.pos), config.attention if own else "softmax", int(r.data["layer"].size)
    )
    if alt_slope > 0:
        alt = float(th.extrapolated_collapse(p["n_a"], p["ratio"], alt_slope))
        alt_h = f"{alt_h}, which crosses eps|h| at n = n_a ratio^(1/{alt_slope:g})"
    else:
        alt, alt_h = float(r.data["n_ext"].values[-1]) * s["ext_grid_ratio"], "no decay: no collapse in the extension"
    m = s["ext_collapse_n"]
    # the predicted interval [lo, hi] around n*, written as the measurement's interval (see Ledger.predict)
    ci = (m - (p["hi"] - p["n_star"]), m + (p["n_star"] - p["lo"]))
    led.predict(
        name,
        measured=m,
        expected=p["n_star"],
        ci=ci,
        coverage=0.95,
        within_run=_one_model(r, "bases (the main run's and the extension's)"),
        alternative=alt,
        hypothesis=alt_h,
        source=source,
        seed=SEED,
        requires_full=True,
        figure="rc_long_collapse",
        why="alpha over the fit's 95% bootstrap CI, ln D(max_len) within the 95% t band (n_bases - 1 dof) of its "
        "mean over the bases of two independent sample sets, plus one step of the extension's grid (theory: "
        "collapse_interval)",
        statement=f"{config.family}, {dt}: the first length from which the float64 distance stays below "
        f"eps({dt}) |h| (measured on lengths up to {int(r.data['n_ext'].values[-1])}) is where the "
        "main run's power law puts it",
    )


# ================================================================================================
# declared studies: the designs behind notebook 05 (python -m probes study representational_collapse STUDY)
# ================================================================================================

CHEAP = {"dtypes": ("bfloat16",), "sensitivity": False}  # the sweeps: one low-precision format, no sensitivity
UNIFORM = {"attention": "uniform", "norm": "none", "mlp": 0}  # attention that averages, no norm or MLP
# collapse measured beyond max_len by the probe (the claim collapse_length_<dtype> lives in its ledger)
EXTEND = {
    "repeat_last": {"extend_dtype": "float16", "extend_lo": 0.5, "extend_hi": 2.0, "extend_lengths": 5},
    "counting": {"extend_dtype": "float32", "extend_lo": 3.0, "extend_hi": 6.0, "extend_lengths": 4, "extend_bases": 2},
    "early_token": {},
}
SENSITIVITY_DEPTHS = {"smoke": (1, 2), "full": (1, 2, 3)}
SEPARATOR_EVERY = 3


def notebook_base(preset: str, seed: int = 0, layers: int = 2, max_len: int = 1024, n_bases: int = 6) -> Config:
    """The configuration every design of notebook 05 starts from; the parameters are its parameter cell (the
    smoke preset keeps its own lengths and samples)."""
    extra = {"max_len": max_len, "n_bases": n_bases} if preset == "full" else {}
    return Config.preset(preset, seed=seed, layers=layers, **extra)


def main_designs(preset: str, base: Config) -> dict[str, dict]:
    """One design per pair family, each with its extension beyond max_len (notebook 05 sections 1-3)."""
    return {f: {"family": f, "sensitivity": False, **EXTEND[f]} for f in th.FAMILIES}


def sensitivity_designs(preset: str, base: Config) -> dict[str, dict]:
    """The last state's sensitivity to each position, per depth, for pre-LN softmax and uniform attention
    (notebook 05 section 4; full: short distances, 6 lengths, fitted from 8)."""
    sens = {"max_len": 128, "n_lengths": 6, "fit_lo": 8.0} if preset == "full" else {}
    sweep = dict(CHEAP, sensitivity=True)
    out = {f"sens_softmax_L{L}": {"layers": L, **sweep, **sens} for L in SENSITIVITY_DEPTHS[preset]}
    out |= {f"sens_uniform_L{L}": {"layers": L, **UNIFORM, **sweep, **sens} for L in SENSITIVITY_DEPTHS[preset]}
    return out


def position_designs(preset: str, base: Config) -> dict[str, dict]:
    """Positional encodings and separators on the repeat and counting pairs (notebook 05 section 5)."""
    fams = ("repeat_last", "counting")
    out = {f"{f}_pos_{p}": {"family": f, "pos": p, **CHEAP} for f in fams for p in ("rope", "learned")}
    out |= {f"{f}_sep{SEPARATOR_EVERY}": {"family": f, "separator_every": SEPARATOR_EVERY, **CHEAP} for f in fams}
    return out


def trained_designs(preset: str, base: Config) -> dict[str, dict]:
    """Every family on a model trained on the Markov language (one sensitivity: it does not depend on the
    family; notebook 05 section 6)."""
    return {
        f"{f}_trained": {"family": f, "trained": True, **CHEAP, "sensitivity": f == th.FAMILIES[0]} for f in th.FAMILIES
    }


def _designs(name: str, description: str, designs, figure: str) -> Study:
    return Study(
        name=name,
        description=description,
        base=notebook_base,
        grid=None,
        designs=designs,
        replicates=REPLICATES,
        combine=dict,
        claims=designs_ledger,
        figure=figure,
    )


STUDIES = {
    "main": _designs(
        "main",
        "the three pair families at every precision, with the collapse beyond max_len (notebook 05 sections 1-3)",
        main_designs,
        "rc_distance",
    ),
    "sensitivity": _designs(
        "sensitivity",
        "the last state's sensitivity to each position against the path count, "
        "per depth, softmax and uniform attention (notebook 05 section 4)",
        sensitivity_designs,
        "rc_sensitivity",
    ),
    "positions": _designs(
        "positions",
        "RoPE and learned positions, and separators, on the repeat and counting pairs (notebook 05 section 5)",
        position_designs,
        "rc_pos",
    ),
    "trained": _designs(
        "trained",
        "every pair family on a model trained on the Markov language (notebook 05 section 6)",
        trained_designs,
        "rc_trained",
    ),
}
