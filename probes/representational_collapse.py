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
bootstrap over samples (:mod:`analysis.fitting`); the predicted alpha (:mod:`analysis.theory.representational_collapse`).
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
from tqdm.auto import tqdm

from analysis import protocol, tasks
from analysis.fitting import bootstrap_power_law
from analysis.hooks import resolve_names, run_with_cache
from analysis.ledger import Ledger
from analysis.model import DTYPES, ModelConfig, TinyTransformer
from analysis.theory import representational_collapse as theory
from analysis.theory.signal_propagation import rank_residual
from probes.base import ProbeConfig, Result, param

NAME = "representational_collapse"
DESCRIPTION = "Representational collapse: last-token distance of near-identical sequences vs length, precision, over-squashing."
VERSION = "4"
REQUIRES = {"input": "tokens"}
BIDIRECTIONAL = "bidirectional model: the causal derivation does not apply"

SOURCE = "Barbero et al. 2024, Transformers need glasses! (ANCHORS.md 4)"
LOW_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Config(ProbeConfig):
    PRESETS = {
        "smoke": {"max_len": 128, "n_lengths": 8, "n_bases": 3, "d_model": 32, "mlp": 64, "sens_len": 32,
                  "n_boot": 100, "fit_lo": 8.0, "train_steps": 30, "train_seq_len": 64},
        "full": {},
    }  # fmt: skip

    # --- protocol -------------------------------------------------------------------------------
    family: str = param("repeat_last", "sequence pair family", choices=theory.FAMILIES)
    max_len: int = param(1024, "longest n (base length; counting: number of ones k)", minimum=8)
    min_len: int = param(4, "shortest n", minimum=2)
    n_lengths: int = param(16, "lengths on a log grid from min_len to max_len", minimum=3)
    n_bases: int = param(6, "samples (random bases / token pairs) per length; bootstrap over them", minimum=2)
    early_position: int = param(0, "early_token: 0-based position of the changed token", minimum=0)
    separator_every: int = param(0, "insert a separator after every this many tokens (0 = none)", minimum=0)
    dtypes: tuple[str, ...] = param(LOW_DTYPES, "dtypes to run besides the float64 reference", choices=LOW_DTYPES)
    sens_len: int = param(256, "sequence length of the over-squashing sensitivity", minimum=4)
    sensitivity: bool = param(True, "measure the sensitivity (one backward pass per model coordinate and layer)")
    # --- model ----------------------------------------------------------------------------------
    layers: int = param(2, "transformer blocks L", minimum=1)
    d_model: int = param(64, "residual width d", minimum=2)
    heads: int = param(2, "attention heads per layer", minimum=1)
    attention: str = param("softmax", "attention kernel", choices=("softmax", "uniform"))
    norm: str = param("pre", "norm placement", choices=("pre", "post", "none"))
    mlp: int = param(256, "MLP hidden width (0 = attention only)", minimum=0)
    pos: str = param("none", "positional encoding (a passed model without a position limit: the one it uses)",
                     choices=("none", "rope", "learned"))
    vocab_size: int = param(64, "vocabulary (the last id is the separator; a passed model's own is used)", minimum=4)
    # --- training -------------------------------------------------------------------------------
    trained: bool = param(False, "train the model on a Markov language first (analysis.train, cached)")
    train_steps: int = param(400, "optimiser updates when trained", minimum=1)
    train_seq_len: int = param(256, "training context length", minimum=2)
    # --- fit ------------------------------------------------------------------------------------
    fit_lo: float = param(16.0, "first n of the power-law window (last: max_len)", minimum=2.0)
    n_boot: int = param(1000, "bootstrap replicates over samples", minimum=10)
    seed: int = param(0, "weights (model seed), data and bootstrap seeds", minimum=0)

    def validate(self) -> None:
        super().validate()
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by heads ({self.heads})")
        if self.pos == "rope" and (self.d_model // self.heads) % 2:
            raise ValueError("pos 'rope' needs an even head size d_model / heads")
        if self.min_len >= self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be below max_len ({self.max_len})")
        if not self.min_len <= self.fit_lo <= self.max_len / 2:
            raise ValueError(f"fit_lo must lie in [min_len, max_len/2] = [{self.min_len}, {self.max_len / 2}], got {self.fit_lo}")
        if self.family == "early_token" and self.early_position >= self.min_len - 1:
            raise ValueError(f"early_position must be below min_len - 1 = {self.min_len - 1}")
        if len(set(self.dtypes)) != len(self.dtypes):
            raise ValueError(f"dtypes must not repeat, got {self.dtypes}")


# ================================================================================================
# Models and data


def seq_bound(config: Config) -> int:
    """Longest sequence the protocol builds (sets ``max_len`` of learned positions)."""
    n = config.max_len + 2
    return n + ((n - 1) // config.separator_every if config.separator_every else 0)


def model_config(config: Config) -> ModelConfig:
    """The TinyTransformer this config measures (untrained weights from ``seed``), float32."""
    return ModelConfig(
        input="tokens", vocab_size=config.vocab_size, output="lm", d_model=config.d_model, n_layers=config.layers,
        n_heads=config.heads, d_mlp=config.mlp, norm=config.norm, attention=config.attention, pos=config.pos,
        max_len=max(seq_bound(config), config.sens_len, config.train_seq_len) if config.pos == "learned" else 1024,
        dtype="float32", seed=config.seed,
    )  # fmt: skip


def train_config(config: Config):
    from analysis.train import probe_lm_train_config

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
        return {dt: TinyTransformer(cfg.replace(dtype=dt)).eval() for dt in names}, info
    if model is None:
        from analysis.tasks import MarkovLanguage
        from analysis.train import train

        task = MarkovLanguage(vocab_size=config.vocab_size, seq_len=config.train_seq_len, seed=config.seed)
        res = train(model_config(config), task, train_config(config), progress=progress)
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
        raise ValueError(f"max_len={config.max_len} builds sequences of {n} tokens but the model has {limit} positions; "
                         f"use max_len <= {config.max_len - (n - limit)}")  # fmt: skip
    protocol.check_length(model, config.sens_len, "sens_len")


def model_vocab(config: Config, model=None) -> int:
    """Token ids the pairs draw from: ``config.vocab_size`` for own models, else the model's own."""
    v = protocol.vocab_size(model) if model is not None else config.vocab_size
    if not isinstance(v, int) or v < 4:
        raise ValueError(f"the model must embed at least 4 token ids, got vocab_size={v}")
    return v


def model_pos(config: Config, model=None) -> str:
    """Positional encoding the predictions use: ``config.pos`` for own models; a passed model with a
    position limit has learned absolute positions, one without is taken to use ``config.pos``."""
    if model is not None and protocol.max_positions(model) is not None:
        return "learned"
    return config.pos


def _device(model) -> torch.device:
    p = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    return p.device if p is not None else torch.device("cpu")


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
    repl = (base[:, config.early_position] + torch.randint(1, V, (S,), generator=gen)) % V
    return {"base": base, "one": one, "zero": zero, "replacement": repl, "separator": V}


def make_pair(config: Config, samples: dict, s: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two 1-D sequences of sample ``s`` at length ``n`` (separators applied if asked)."""
    if config.family == "repeat_last":
        pair = tasks.repeat_last_pair(samples["base"][s, :n])
    elif config.family == "counting":
        pair = tasks.counting_pair(n, int(samples["one"][s]), int(samples["zero"][s]))
    else:
        pair = tasks.early_token_pair(samples["base"][s, :n], config.early_position, int(samples["replacement"][s]))
    if config.separator_every:
        pair = tasks.apply_to_pair(pair, tasks.with_separators, int(samples.get("separator", config.vocab_size - 1)),
                                   config.separator_every)
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


def measure_distances(models: dict, config: Config, ns: np.ndarray, progress: bool = True,
                      vocab: int | None = None) -> dict[str, np.ndarray]:
    """Per dtype, sample and n: ``distance`` |h_a - h_b| (float64 of the dtype's states), ``norm`` (mean |h|),
    ``argmax_equal`` and ``identical`` (bool), ``divergence`` |(h_a - h_b) - (h_a - h_b)_float64|; the float64
    ``layer_distance`` (S, L, N) of every block; plus the float64 ``h0`` inputs of block 0 and final states
    ``hL`` of the pairs (for the exact uniform check): lists over n of (2S, T, d) and (2S, d)."""
    samples = draw_samples(config, vocab)
    ref = models["float64"]
    S, L = config.n_bases, ref.n_layers
    causal = bool(ref.causal)
    dev = _device(ref)
    resid = [f"blocks.{layer}.hook_resid_post" for layer in range(L)]
    last = resid[-1]
    out = {dt: {k: np.zeros((S, len(ns))) for k in ("distance", "norm", "argmax_equal", "identical", "divergence")}
           for dt in models}  # fmt: skip
    layer_distance = np.zeros((S, L, len(ns)))
    exact: dict[str, list] = {"h0": [], "last": []}
    for j, n in enumerate(tqdm(ns, disable=not progress, desc="lengths", leave=False)):
        pairs = [make_pair(config, samples, s, int(n)) for s in range(S)]
        ids, idx = _batch([x for p in pairs for x in p])  # rows: a_0, b_0, a_1, b_1, ...
        bias = None if causal else pad_bias(idx, ids.shape[1]).to(dev)
        rows = torch.arange(ids.shape[0])
        diff64 = None
        for dt, model in models.items():
            names = [last] if dt != "float64" else resid + ["blocks.0.hook_resid_pre"]
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
                exact["h0"].append((cache["blocks.0.hook_resid_pre"].numpy(), idx.numpy()))
                exact["last"].append(h.numpy())
    return {"per_dtype": out, "exact": exact, "layer_distance": layer_distance}


def sensitivity(model, config: Config, vocab: int | None = None, chunk: int = 64) -> np.ndarray:
    """``|d h^l_last / d x_i|_F`` (L, T) by autograd w.r.t. ``hook_embed``, float64 model, one random base.

    The Frobenius norm needs one backward pass per output coordinate: the batch holds one copy of the
    sequence per coordinate, ``chunk`` coordinates at a time (the squared norms add over chunks).
    """
    gen = torch.Generator().manual_seed(config.seed + 15485863)  # sensitivity base only
    T = config.sens_len
    seq = torch.randint(0, (vocab or config.vocab_size) - 1, (T,), generator=gen)
    dev = _device(model)
    resid = [f"blocks.{layer}.hook_resid_post" for layer in range(model.n_layers)]
    names = ["hook_embed"] + resid
    resolve_names(model, names)
    with torch.no_grad():
        _, cache = run_with_cache(model, seq[None].to(dev), names=["hook_embed"])
    d = cache["hook_embed"].shape[-1]
    sq = np.zeros((len(resid), T))
    with torch.enable_grad():
        for c0 in range(0, d, chunk):
            c1 = min(d, c0 + chunk)
            ids = seq[None].expand(c1 - c0, T).to(dev)  # (c, T): one copy per output coordinate
            _, cache = run_with_cache(model, ids, names=names, detach=False)
            x = cache["hook_embed"]
            pick = torch.eye(d, dtype=x.dtype, device=x.device)[c0:c1]  # (c, d): row b picks coordinate c0 + b
            for layer, r in enumerate(resid):
                y = (cache[r][:, -1, :] * pick).sum()
                (g,) = torch.autograd.grad(y, x, retain_graph=layer < len(resid) - 1)  # (c, T, d)
                sq[layer] += g.double().pow(2).sum(dim=(0, 2)).cpu().numpy()
    return np.sqrt(sq)


def uniform_matrices(model) -> list[np.ndarray]:
    """``A_l = W_o W_v`` (d, d) per layer (uniform heads share one pattern, so the heads combine)."""
    return [(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()).detach().numpy() for blk in model.blocks]


# ================================================================================================
# The probe


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
    D64 = per["float64"]["distance"]  # (S, N)
    norm = np.exp(np.log(per["float64"]["norm"]).mean(0))  # (N,) geometric mean |h|

    def gmean(x):
        with np.errstate(divide="ignore"):
            return np.exp(np.log(x).mean(0))

    dist = np.stack([gmean(per[dt]["distance"]) for dt in dts])  # (dtype, N)
    rng = np.random.default_rng(config.seed + 104729)
    nf = ns.astype(np.float64)
    window = (config.fit_lo, float(config.max_len))
    fit = None
    if np.all(D64 > 0):
        fit = bootstrap_power_law(nf, D64, window, n_boot=config.n_boot, rng=rng, n_points=len(ns))
    slope = fit.alpha if fit else math.nan
    slope_ci = fit.alpha_ci if fit else (math.nan, math.nan)
    attention = config.attention if own_model else "softmax"
    predicted = theory.predicted_slope(config.family, pos, separators=config.separator_every > 0, attention=attention)
    # depth: a fit per layer on its own bootstrap stream (the main fit's stream is unchanged)
    LD = m["layer_distance"]  # (S, L, N)
    depth_fits = []
    for layer in range(L):
        ok = np.all(LD[:, layer] > 0)
        depth_fits.append(bootstrap_power_law(nf, LD[:, layer], window, n_boot=config.n_boot, n_points=len(ns),
                                              rng=np.random.default_rng([config.seed, 7, layer])) if ok else None)
    grid = nf[(nf >= window[0]) & (nf <= window[1])]
    depth_pred = theory.predicted_depth_slopes(config.family, pos, L, grid, config.separator_every > 0, attention,
                                               config.early_position)  # fmt: skip
    # effective float floor: exponent of the dtype's divergence from float64 against n, bootstrap over samples
    floor_fits = {}
    for i, dt in enumerate(dts[1:], start=1):
        Dv = per[dt]["divergence"]
        if np.all(Dv[:, nf >= window[0]] > 0):
            floor_fits[dt] = bootstrap_power_law(nf, Dv / norm, window, n_boot=config.n_boot, n_points=len(ns),
                                                 rng=np.random.default_rng([config.seed, 11, i]))  # fmt: skip
    collapse = np.array([theory.collapse_length(ns, dist[0], norm, dt) for dt in dts])
    # where the fitted power law crosses eps |h| (|h| at max_len): the extrapolated collapse length
    # (in logs, capped at e^709 ~ the largest float64: a near-zero slope extrapolates beyond any length)
    extrap = np.array([math.nan] + [
        float(np.exp(min(np.log(ns[-1]) + np.log(dist[0, -1] / theory.resolution(dt, norm[-1])) / slope, 709.0)))
        if fit and slope > 0 else math.nan for dt in dts[1:]])  # fmt: skip
    # how far each dtype's distance is from the float64 one (median over samples): ~0 while resolved
    rel_error = np.stack([np.median(np.abs(per[dt]["distance"] - D64) / D64, axis=0) for dt in dts])
    divergence = np.stack([np.median(per[dt]["divergence"], axis=0) for dt in dts])
    sens = sensitivity(ref, config, vocab) if config.sensitivity else np.full((L, config.sens_len), np.nan)  # (L, T)
    d_model = int(protocol_width(ref))
    path = theory.path_sensitivity(config.sens_len, L) * math.sqrt(d_model)  # A = I: |I|_F = sqrt(d)

    # rank residual of the longest first sample's float64 states (sequence a)
    seq = make_pair(config, draw_samples(config, vocab), 0, int(ns[-1]))[0]
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{layer}.hook_resid_post" for layer in range(L)]
    with torch.no_grad():
        _, cache = run_with_cache(ref, seq[None].to(_device(ref)), names=names)
    rr = np.array([float(rank_residual(cache[k][0].cpu())) for k in names])

    led = Ledger(NAME, preset=config.preset_name)
    exact_uniform = config.attention == "uniform" and config.norm == "none" and config.mlp == 0 and own_model
    mats = uniform_matrices(ref) if exact_uniform else None
    sens_exact = None
    if exact_uniform:
        R = theory.linear_stack_sensitivity(config.sens_len, mats)
        sens_exact = np.sqrt((R**2).sum(axis=(1, 2)))
    ctx = {"own_model": own_model, "causal": causal, "pos": pos, "L": L, "depth_fits": depth_fits,
           "depth_pred": depth_pred, "floor_fits": floor_fits, "extrap": extrap, "norm": norm, "dist": dist}
    _claims(led, config, m, ns, dts, rel_error, fit, predicted, collapse, sens, mats, sens_exact, ctx)

    data = xr.Dataset(
        {
            "distance": (("dtype", "n"), dist),
            "distance_samples": (("sample", "dtype", "n"), np.stack([per[dt]["distance"] for dt in dts], axis=1)),
            "layer_distance": (("layer", "n"), gmean(LD)),
            "norm": (("n",), norm),
            "resolution": (("dtype", "n"), np.stack([theory.resolution(dt, norm) for dt in dts])),
            "divergence": (("dtype", "n"), divergence),
            "argmax_equal": (("dtype", "n"), np.stack([per[dt]["argmax_equal"].mean(0) for dt in dts])),
            "identical": (("dtype", "n"), np.stack([per[dt]["identical"].mean(0) for dt in dts])),
            "rel_error": (("dtype", "n"), rel_error),
            "collapse_n": (("dtype",), collapse),
            "collapse_n_extrapolated": (("dtype",), extrap),
            "slope_ci": (("end",), np.array(slope_ci)),
            "layer_slope": (("layer",), np.array([f.alpha if f else math.nan for f in depth_fits])),
            "layer_slope_predicted": (("layer",), depth_pred),
            "sensitivity": (("layer", "position"), sens),
            "path_count": (("position",), path),
            "rank_residual": (("depth",), rr),
        },
        coords={"dtype": dts, "n": ns, "sample": np.arange(config.n_bases), "end": ["lo", "hi"],
                "layer": np.arange(1, L + 1), "position": np.arange(1, config.sens_len + 1), "depth": np.arange(L + 1)},
    )  # fmt: skip
    if sens_exact is not None:
        data["sensitivity_exact"] = (("position",), sens_exact)
    scalars = {
        "slope": slope, "slope_ci_lo": slope_ci[0], "slope_ci_hi": slope_ci[1], "predicted_slope": predicted,
        "fit_lo": float(config.fit_lo), "fit_hi": float(config.max_len),
        "fit_rms_residual": fit.rms_residual if fit else math.nan,
        "distance_at_max_len": float(dist[0, -1]),
        "sens_first_over_middle": float(sens[-1, 0] / sens[-1, config.sens_len // 2]),
        "causal": float(causal),
    }  # fmt: skip
    for dt, c, e in zip(dts, collapse, extrap, strict=True):
        scalars[f"collapse_n_{dt}"] = float(c)
        if dt != "float64":
            scalars[f"collapse_n_extrapolated_{dt}"] = float(e)
        if dt != "float64" and math.isfinite(c):  # the outputs in that dtype once collapsed (samples x lengths)
            after = ns >= c
            scalars[f"argmax_equal_after_collapse_{dt}"] = float(per[dt]["argmax_equal"][:, after].mean())
            scalars[f"identical_after_collapse_{dt}"] = float(per[dt]["identical"][:, after].mean())
    for dt, f in floor_fits.items():
        scalars[f"floor_exponent_{dt}"] = -f.alpha  # divergence ~ n^(+beta)
    if "train_loss" in info:
        scalars["train_loss"] = float(info["train_loss"])
    meta = {k: v for k, v in info.items() if k != "train_loss"}
    meta["pos_assumed"] = pos
    return Result(probe=NAME, config=config, data=data, scalars=scalars, ledger=led, meta=meta)


def collapse_prediction(result: Result, dtype: str, grid_ratio: float = 1.0, k: float = 3.0) -> dict[str, float]:
    """Where ``result``'s float64 power law puts the collapse of ``dtype``, with an interval for a measurement.

    Anchored at the run's longest length ``n_a`` (the probe's ``collapse_n_extrapolated``):
    ``n* = n_a (D(n_a) / eps|h(n_a)|)^(1/alpha)``. The interval
    (:func:`analysis.theory.representational_collapse.collapse_interval`) takes ``alpha`` over the fit's
    bootstrap CI, the level ``ln D(n_a)`` within ``k`` standard errors of its mean over the ``S`` samples
    (``std_s ln D_s(n_a) / sqrt(S)``; counted twice in variance, ``sqrt(2)``, because a second run that measures
    the collapse draws its own samples) and one step ``grid_ratio`` of the measuring run's length grid.
    """
    d, s = result.data, result.scalars
    ln_d = np.log(d["distance_samples"].sel(dtype="float64").values[:, -1])  # (S,)
    log_se = float(ln_d.std(ddof=1) / math.sqrt(ln_d.size)) * math.sqrt(2.0)
    ratio = float(d["distance"].sel(dtype="float64")[-1] / d["resolution"].sel(dtype=dtype)[-1])
    n_a = float(d["n"].values[-1])
    lo, hi = theory.collapse_interval(n_a, ratio, (s["slope_ci_lo"], s["slope_ci_hi"]), log_se, grid_ratio, k)
    n_star = float(theory.extrapolated_collapse(n_a, ratio, s["slope"]))
    return {"n_star": n_star, "lo": lo, "hi": hi, "ratio": ratio, "log_se": log_se}


def protocol_width(model) -> int:
    """Residual width ``d``: the last axis of ``hook_embed`` on a one-token input."""
    with torch.no_grad():
        _, cache = run_with_cache(model, torch.zeros(1, 1, dtype=torch.long, device=_device(model)), names=["hook_embed"])
    return int(cache["hook_embed"].shape[-1])


def _claims(led, config, m, ns, dts, rel_error, fit, predicted, collapse, sens, mats, sens_exact, ctx):
    per, L = m["per_dtype"], ctx["L"]
    own, causal = ctx["own_model"], ctx["causal"]
    eps64 = theory.EPS["float64"]
    # the softmax predictions are asymptotic; anything but our own uniform stack carries O(1) corrections
    softmax_dev = None
    if config.norm != "none" or config.mlp or config.attention != "uniform" or config.trained or not own:
        softmax_dev = ("softmax logits, norms and MLPs add O(1) corrections at finite n; the prediction is "
                       "asymptotic for bounded logits")  # fmt: skip
    if mats is not None:
        # the network is the linear stack h <- h + M h A^T: recompute every pair's last states from the
        # block-0 inputs the network saw (pads sit after the read-out index, causal: no effect)
        worst = 0.0
        for (h0, idx), h_last in zip(m["exact"]["h0"], m["exact"]["last"], strict=True):
            pred = np.stack([theory.linear_stack(h0[r, : idx[r] + 1], mats)[-1] for r in range(h0.shape[0])])
            worst = max(worst, float(np.abs(pred - h_last).max() / np.abs(h_last).max()))
        T = int(ns[-1]) + 2
        tol = 8.0 * L * T * math.sqrt(config.d_model) * eps64  # <= T-term running means per layer, d-term products
        led.close("uniform_equals_linear_stack", measured=worst, expected=0.0, atol=tol,
                  source="derivation: uniform attention without norm or MLP is exactly linear (theory module, item 5)",
                  why="float64 summation error of T-term running means and d-term products over L layers",
                  statement="network last-token states == exact linear stack (max abs error / max |h|)",
                  figure="rc_distance")  # fmt: skip
    if mats is not None and not config.sensitivity:
        led.not_evaluated("sensitivity_equals_path_sum", source="derivation (theory module, item 4)",
                          reason="sensitivity=False: not measured")
    elif mats is not None:
        dev = float(np.max(np.abs(sens[-1] - sens_exact) / sens_exact.max()))
        led.close("sensitivity_equals_path_sum", measured=dev, expected=0.0, atol=tol,
                  source="derivation: backward path recursion of the linear stack (theory module, item 4)",
                  why="float64 rounding of the autograd and of the recursion, as above",
                  statement="autograd |dh_last/dx_i|_F == exact path sum with the model's W_o W_v, every i",
                  figure="rc_sensitivity")  # fmt: skip
    causal_claims = ["slope_matches_prediction"] + [f"slope_depth{layer}" for layer in range(1, L + 1)]
    if L >= 2:
        causal_claims.append("sensitivity_first_exceeds_middle")
    if not causal:
        for name in causal_claims:
            led.not_evaluated(name, source=f"{SOURCE}; derivation (theory module)", reason=BIDIRECTIONAL)
    if causal and fit is not None and math.isfinite(predicted):
        # finite-n corrections: the next order in the counting/repeat expansions is relative O(L/n) at the
        # window start, and the early-token relay factor (ln n)^(L-1) lowers the local exponent by
        # (L-1)/ln n; allow that plus three bootstrap standard errors
        n0 = config.fit_lo
        corr = (L - 1) / math.log(n0) if config.family == "early_token" else L / n0 + 0.1 * (L - 1)
        tol = 3.0 * (fit.alpha_boot_se or 0.0) + corr
        led.close("slope_matches_prediction", measured=fit.alpha, expected=predicted, atol=tol,
                  source=f"{SOURCE}; derivation (theory module, items 1-3, 7)",
                  why="finite-n correction of the expansion plus 3 bootstrap SE", deviation=softmax_dev,
                  requires_full=config.attention != "uniform" or not own,
                  statement=f"{config.family} (pos {ctx['pos']}, sep {config.separator_every}): fitted decay "
                            f"exponent = predicted {predicted}", figure="rc_distance")  # fmt: skip
        for layer, (f, want) in enumerate(zip(ctx["depth_fits"], ctx["depth_pred"], strict=True), start=1):
            if f is None:
                led.not_evaluated(f"slope_depth{layer}", source=SOURCE, reason="a zero distance (bitwise-equal states)")
                continue
            # the early-token prediction already is the exponent fitted to the depth-l path count on this
            # window; the O(1/n) next order of the one-layer expansions adds layer/n0 at the window start
            tol_l = 3.0 * (f.alpha_boot_se or 0.0) + layer / n0
            led.close(f"slope_depth{layer}", measured=f.alpha, expected=float(want), atol=tol_l,
                      source="derivation: the one-layer rates carried through depth (theory module, item 6)",
                      why="3 bootstrap SE plus the O(layer/n) next order at the window start",
                      deviation=softmax_dev, requires_full=config.attention != "uniform" or not own,
                      statement=f"layer {layer}: fitted exponent of the float64 pair distance = {float(want):.3f}, "
                                "the single-layer rate carried to this depth", figure="rc_depth")  # fmt: skip
    elif causal and ctx["pos"] == "learned" and fit is not None:
        led.bound("learned_positions_no_collapse", measured=fit.alpha, bound=0.5, relation="<",
                  source="derivation: the read-out position differs between the two sequences (theory module, item 2)",
                  why="no decay is predicted: an exponent well below the repeat family's 1",
                  deviation="trained models may learn smooth position embeddings" if config.trained or not own else None,
                  statement=f"{config.family} with learned absolute positions: distance does not decay (alpha < 0.5)",
                  figure="rc_pos")  # fmt: skip
    for i, dt in enumerate(dts[1:], start=1):
        _precision_claims(led, config, per, ns, dt, i, collapse[i], rel_error, ctx)
    if L >= 2 and causal and not config.sensitivity:
        led.not_evaluated("sensitivity_first_exceeds_middle", source=f"{SOURCE}; path counting (theory module, item 4)",
                          reason="sensitivity=False: not measured")
    elif L >= 2 and causal:
        # path counting: with L >= 2 early positions have more paths, so the first token's sensitivity
        # exceeds a middle token's (theory: strictly decreasing profile for A = I)
        ratio = float(sens[-1, 0] / sens[-1, config.sens_len // 2])
        led.bound("sensitivity_first_exceeds_middle", measured=ratio, bound=1.0, relation=">",
                  source=f"{SOURCE}; path counting (theory module, item 4)",
                  why="the path count of L >= 2 uniform layers is strictly decreasing in i",
                  deviation=None if config.attention == "uniform" and config.norm == "none" and own else
                  "softmax logits, norms and MLPs reweight paths; the count is a qualitative guide only",
                  statement="|dh_last/dx_1| > |dh_last/dx_(T/2)| (last layer)", figure="rc_sensitivity")  # fmt: skip


def _precision_claims(led, config, per, ns, dt, i, c, rel_error, ctx):
    """Collapse (or its absence up to max_len) and the effective floor of format ``dt``."""
    f = ctx["floor_fits"].get(dt) if dt == "float32" else None  # coarser formats collapse inside the window
    if f is not None:
        # rounding model (theory module, precision): random bases give an n-independent floor; the counting
        # prefix is coherent (k copies of one value), a + b sqrt(n): local exponent in (0, 1/2)
        coherent = config.family == "counting"  # with separators the prefix is two-state: still coherent
        lo, hi = theory.floor_exponent(coherent)
        beta, se = -f.alpha, f.alpha_boot_se or 0.0
        why = ("3 bootstrap SE of the fitted exponent plus 0.1 for the next order; the rounding model fixes "
               "the exponent, not the constant (the number of roundings per state), so the exponent is compared")
        stmt = (f"{dt}: |(h_a - h_b) - (h_a - h_b)_64| / |h| grows like n^beta, beta in [{lo}, {hi}] "
                f"({'coherent counting prefix: a + b sqrt(n)' if coherent else 'random bases: n-independent'})")
        # margin 0.1: the model fixes the leading order only (n-independent against sqrt(n)); sources of
        # different n-dependence mix at the next order, and +-0.1 over the window's decade and more of n is
        # a change of the floor by under a factor 1.6, against a factor 4-6 for a sqrt(n) growth
        led.within(f"floor_{dt}_exponent", measured=beta, lo=lo - 3 * se - 0.1, hi=hi + 3 * se + 0.1,
                   source="derivation: probabilistic rounding of n-term attention sums (theory module, precision)",
                   why=why, statement=stmt, figure="rc_precision")  # fmt: skip
    if not math.isfinite(c):
        # never below eps|h| up to max_len: a measured bound, and where the fitted power law says it would be
        ratio = float(ctx["dist"][0, -1] / theory.resolution(dt, ctx["norm"][-1]))
        n_star = float(ctx["extrap"][i])
        led.bound(f"collapse_{dt}_beyond_max_len", measured=ratio, bound=1.0, relation=">", source=SOURCE,
                  why="a measured bound in place of the collapse claims: the float64 distance at max_len is still "
                      f"above the resolution eps({dt}) |h|; the fitted power law puts the crossing at n ~ {n_star:.3g}",
                  statement=f"no collapse in {dt} up to n = {int(ns[-1])} (distance / (eps |h|) at max_len > 1)",
                  figure="rc_precision")  # fmt: skip
        return
    after = ns >= c
    frac = float(per[dt]["argmax_equal"][:, after].mean())
    led.close(f"collapse_{dt}_outputs_coincide", measured=frac, expected=1.0, atol=0.0,
              source=SOURCE, requires_full=dt != "float16",
              why="below the format's resolution the two states differ by rounding only; one flipped "
                  "argmax among the samples would show the format still separates them",
              deviation="a near-tie of the two largest logits can still flip on rounding noise",
              statement=f"for n >= collapse_n({dt}) the output argmax of the two sequences coincides "
                        f"(fraction of samples x lengths)", figure="rc_precision")  # fmt: skip
    err = float(np.median(rel_error[i, after]))
    led.bound(f"collapse_{dt}_unresolved", measured=err, bound=0.1, relation=">=", source=SOURCE,
              requires_full=dt != "float16",
              deviation="the two states share their prefix and almost all their arithmetic, so their "
                        "rounding errors can be correlated and cancel in the difference (seen in a "
                        "one-layer uniform stack in bfloat16)",
              why="below eps|h| the final rounding of each state alone (half an ulp per coordinate, "
                  "independent for the two states unless they round identically, which gives error 1) "
                  "is comparable to the distance; 0.1 leaves a factor ~3 below that typical size",
              statement=f"for n >= collapse_n({dt}) the {dt} distance no longer tracks the float64 one "
                        "(median |D_dtype - D_64| / D_64 >= 0.1)", figure="rc_precision")  # fmt: skip
