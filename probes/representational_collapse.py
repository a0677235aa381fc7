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
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr
from tqdm.auto import tqdm

from analysis import tasks
from analysis.fitting import bootstrap_power_law
from analysis.hooks import resolve_names, run_with_cache
from analysis.ledger import Ledger
from analysis.model import DTYPES, ModelConfig, TinyTransformer
from analysis.theory import representational_collapse as theory
from analysis.theory.signal_propagation import rank_residual
from probes.base import ProbeConfig, Result, param

NAME = "representational_collapse"
DESCRIPTION = "Representational collapse: last-token distance of near-identical sequences vs length, precision, over-squashing."
VERSION = "2"
REQUIRES = {"causal": True, "input": "tokens"}

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
    # --- model ----------------------------------------------------------------------------------
    layers: int = param(2, "transformer blocks L", minimum=1)
    d_model: int = param(64, "residual width d", minimum=2)
    heads: int = param(2, "attention heads per layer", minimum=1)
    attention: str = param("softmax", "attention kernel", choices=("softmax", "uniform"))
    norm: str = param("pre", "norm placement", choices=("pre", "post", "none"))
    mlp: int = param(256, "MLP hidden width (0 = attention only)", minimum=0)
    pos: str = param("none", "positional encoding", choices=("none", "rope", "learned"))
    vocab_size: int = param(64, "vocabulary (the last id is the separator)", minimum=4)
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
    from analysis.train import TrainConfig

    return TrainConfig(steps=config.train_steps, batch_size=16, lr=3e-3, warmup_steps=min(50, config.train_steps // 5),
                       weight_decay=0.01, seed=config.seed)  # fmt: skip


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
    return {dt: copy.deepcopy(model).to(dtype=DTYPES[dt]).eval() for dt in names}, info


def lengths(config: Config) -> np.ndarray:
    """The n grid: about ``n_lengths`` integers spaced evenly in ln n (duplicates removed)."""
    return np.unique(np.round(np.geomspace(config.min_len, config.max_len, config.n_lengths)).astype(int))


def draw_samples(config: Config) -> dict[str, torch.Tensor]:
    """Per sample: a random base of ``max_len`` tokens (prefixes give every n), (one, zero) and a replacement."""
    gen = torch.Generator().manual_seed(config.seed + 7919)  # data only
    V = config.vocab_size - 1  # the last id is reserved for separators
    S = config.n_bases
    base = torch.randint(0, V, (S, config.max_len), generator=gen)
    one = torch.randint(0, V, (S,), generator=gen)
    zero = (one + torch.randint(1, V, (S,), generator=gen)) % V  # differs from one
    repl = (base[:, config.early_position] + torch.randint(1, V, (S,), generator=gen)) % V
    return {"base": base, "one": one, "zero": zero, "replacement": repl}


def make_pair(config: Config, samples: dict, s: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two 1-D sequences of sample ``s`` at length ``n`` (separators applied if asked)."""
    if config.family == "repeat_last":
        pair = tasks.repeat_last_pair(samples["base"][s, :n])
    elif config.family == "counting":
        pair = tasks.counting_pair(n, int(samples["one"][s]), int(samples["zero"][s]))
    else:
        pair = tasks.early_token_pair(samples["base"][s, :n], config.early_position, int(samples["replacement"][s]))
    if config.separator_every:
        pair = tasks.apply_to_pair(pair, tasks.with_separators, config.vocab_size - 1, config.separator_every)
    return pair


def _batch(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (B, T) ids and each row's last index (B,)."""
    T = max(len(x) for x in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, : len(x)] = x
    return ids, torch.tensor([len(x) - 1 for x in seqs])


# ================================================================================================
# Measurement


def measure_distances(models: dict, config: Config, ns: np.ndarray, progress: bool = True) -> dict[str, np.ndarray]:
    """Per dtype, sample and n: ``distance`` |h_a - h_b| (float64 of the dtype's states), ``norm`` (mean |h|),
    ``argmax_equal`` and ``identical`` (bool); plus the float64 ``h0`` inputs of block 0 and final states
    ``hL`` of the pairs (for the exact uniform check): lists over n of (2S, T, d) and (2S, d)."""
    samples = draw_samples(config)
    S, L = config.n_bases, config.layers
    last = f"blocks.{L - 1}.hook_resid_post"
    out = {dt: {k: np.zeros((S, len(ns))) for k in ("distance", "norm", "argmax_equal", "identical")} for dt in models}
    exact: dict[str, list] = {"h0": [], "last": []}
    for j, n in enumerate(tqdm(ns, disable=not progress, desc="lengths", leave=False)):
        pairs = [make_pair(config, samples, s, int(n)) for s in range(S)]
        ids, idx = _batch([x for p in pairs for x in p])  # rows: a_0, b_0, a_1, b_1, ...
        rows = torch.arange(ids.shape[0])
        for dt, model in models.items():
            names = [last] + (["blocks.0.hook_resid_pre"] if dt == "float64" else [])
            with torch.no_grad():
                logits, cache = run_with_cache(model, ids, names=names)
            h = cache[last][rows, idx].double()  # (2S, d)
            am = logits[rows, idx].argmax(-1)  # (2S,)
            ha, hb = h[0::2], h[1::2]
            out[dt]["distance"][:, j] = (ha - hb).norm(dim=-1).numpy()
            out[dt]["norm"][:, j] = (0.5 * (ha.norm(dim=-1) + hb.norm(dim=-1))).numpy()
            out[dt]["argmax_equal"][:, j] = (am[0::2] == am[1::2]).numpy()
            out[dt]["identical"][:, j] = (cache[last][rows, idx][0::2] == cache[last][rows, idx][1::2]).all(-1).numpy()
            if dt == "float64":
                exact["h0"].append((cache["blocks.0.hook_resid_pre"].numpy(), idx.numpy()))
                exact["last"].append(h.numpy())
    return {"per_dtype": out, "exact": exact}


def sensitivity(model, config: Config) -> np.ndarray:
    """``|d h^l_last / d x_i|_F`` (L, T) by autograd w.r.t. ``hook_embed``, float64 model, one random base."""
    gen = torch.Generator().manual_seed(config.seed + 15485863)  # sensitivity base only
    T = config.sens_len
    seq = torch.randint(0, config.vocab_size - 1, (T,), generator=gen)
    resid = [f"blocks.{layer}.hook_resid_post" for layer in range(model.n_layers)]
    resolve_names(model, resid)
    d = None
    out = []
    with torch.enable_grad():
        probe_out, cache = run_with_cache(model, seq[None], names=["hook_embed"] + resid, detach=False)
        d = cache["hook_embed"].shape[-1]
        ids = seq[None].expand(d, T)  # (d, T): one copy per output coordinate
        _, cache = run_with_cache(model, ids, names=["hook_embed"] + resid, detach=False)
        x = cache["hook_embed"]
        eye = torch.eye(d, dtype=x.dtype)
        for layer, r in enumerate(resid):
            y = (cache[r][:, -1, :] * eye).sum()  # row b picks coordinate b of the last state
            (g,) = torch.autograd.grad(y, x, retain_graph=layer < len(resid) - 1)  # (d, T, d)
            out.append(g.double().pow(2).sum(dim=(0, 2)).sqrt().numpy())
    del probe_out
    return np.stack(out)


def uniform_matrices(model) -> list[np.ndarray]:
    """``A_l = W_o W_v`` (d, d) per layer (uniform heads share one pattern, so the heads combine)."""
    return [(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()).detach().numpy() for blk in model.blocks]


# ================================================================================================
# The probe


def run(config: Config, model=None, progress: bool = True) -> Result:
    own_model = model is None
    models, info = build_models(config, model, progress=progress)
    ref = models["float64"]
    L = ref.n_layers
    ns = lengths(config)
    m = measure_distances(models, config, ns, progress=progress)
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
    fit = None
    if np.all(D64 > 0):
        fit = bootstrap_power_law(nf, D64, (config.fit_lo, float(config.max_len)), n_boot=config.n_boot, rng=rng,
                                  n_points=len(ns))  # fmt: skip
    slope = fit.alpha if fit else math.nan
    slope_ci = fit.alpha_ci if fit else (math.nan, math.nan)
    predicted = theory.predicted_slope(config.family, config.pos, separators=config.separator_every > 0)
    collapse = np.array([theory.collapse_length(ns, dist[0], norm, dt) for dt in dts])
    # how far each dtype's distance is from the float64 one (median over samples): ~0 while resolved
    rel_error = np.stack([np.median(np.abs(per[dt]["distance"] - D64) / D64, axis=0) for dt in dts])
    sens = sensitivity(ref, config)  # (L, T)
    path = theory.path_sensitivity(config.sens_len, L) * math.sqrt(config.d_model)  # A = I: |I|_F = sqrt(d)

    # rank residual of the longest first sample's float64 states (sequence a)
    seq = make_pair(config, draw_samples(config), 0, int(ns[-1]))[0]
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{layer}.hook_resid_post" for layer in range(L)]
    with torch.no_grad():
        _, cache = run_with_cache(ref, seq[None], names=names)
    rr = np.array([float(rank_residual(cache[k][0])) for k in names])

    led = Ledger(NAME, preset=config.preset_name)
    exact_uniform = config.attention == "uniform" and config.norm == "none" and config.mlp == 0 and own_model
    mats = uniform_matrices(ref) if exact_uniform else None
    sens_exact = None
    if exact_uniform:
        R = theory.linear_stack_sensitivity(config.sens_len, mats)
        sens_exact = np.sqrt((R**2).sum(axis=(1, 2)))
    _claims(led, config, m, ns, dts, rel_error, fit, predicted, collapse, sens, mats, sens_exact)

    data = xr.Dataset(
        {
            "distance": (("dtype", "n"), dist),
            "distance_samples": (("sample", "dtype", "n"), np.stack([per[dt]["distance"] for dt in dts], axis=1)),
            "norm": (("n",), norm),
            "resolution": (("dtype", "n"), np.stack([theory.resolution(dt, norm) for dt in dts])),
            "argmax_equal": (("dtype", "n"), np.stack([per[dt]["argmax_equal"].mean(0) for dt in dts])),
            "identical": (("dtype", "n"), np.stack([per[dt]["identical"].mean(0) for dt in dts])),
            "rel_error": (("dtype", "n"), rel_error),
            "collapse_n": (("dtype",), collapse),
            "slope_ci": (("end",), np.array(slope_ci)),
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
    }  # fmt: skip
    for dt, c in zip(dts, collapse, strict=True):
        scalars[f"collapse_n_{dt}"] = float(c)
    if "train_loss" in info:
        scalars["train_loss"] = float(info["train_loss"])
    meta = {k: v for k, v in info.items() if k != "train_loss"}
    return Result(probe=NAME, config=config, data=data, scalars=scalars, ledger=led, meta=meta)


def _claims(led, config, m, ns, dts, rel_error, fit, predicted, collapse, sens, mats, sens_exact):
    per, L = m["per_dtype"], config.layers
    eps64 = theory.EPS["float64"]
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
        dev = float(np.max(np.abs(sens[-1] - sens_exact) / sens_exact.max()))
        led.close("sensitivity_equals_path_sum", measured=dev, expected=0.0, atol=tol,
                  source="derivation: backward path recursion of the linear stack (theory module, item 4)",
                  why="float64 rounding of the autograd and of the recursion, as above",
                  statement="autograd |dh_last/dx_i|_F == exact path sum with the model's W_o W_v, every i",
                  figure="rc_sensitivity")  # fmt: skip
    if fit is not None and math.isfinite(predicted):
        # finite-n corrections: the next order in the counting/repeat expansions is relative O(L/n) at the
        # window start, and the early-token relay factor (ln n)^(L-1) lowers the local exponent by
        # (L-1)/ln n; allow that plus three bootstrap standard errors
        n0 = config.fit_lo
        corr = (L - 1) / math.log(n0) if config.family == "early_token" else L / n0 + 0.1 * (L - 1)
        tol = 3.0 * (fit.alpha_boot_se or 0.0) + corr
        deviation = None
        if config.norm != "none" or config.mlp or config.attention != "uniform" or config.trained:
            deviation = ("softmax logits, norms and MLPs add O(1) corrections at finite n; the prediction is "
                         "asymptotic for bounded logits")  # fmt: skip
        led.close("slope_matches_prediction", measured=fit.alpha, expected=predicted, atol=tol,
                  source=f"{SOURCE}; derivation (theory module, items 1-3)",
                  why="finite-n correction of the expansion plus 3 bootstrap SE", deviation=deviation,
                  requires_full=config.attention != "uniform",
                  statement=f"{config.family} (pos {config.pos}, sep {config.separator_every}): fitted decay "
                            f"exponent = predicted {predicted}", figure="rc_distance")  # fmt: skip
    elif config.pos == "learned" and fit is not None:
        led.bound("learned_positions_no_collapse", measured=fit.alpha, bound=0.5, relation="<",
                  source="derivation: the read-out position differs between the two sequences (theory module, item 2)",
                  why="no decay is predicted: an exponent well below the repeat family's 1",
                  deviation="trained models may learn smooth position embeddings" if config.trained else None,
                  statement=f"{config.family} with learned absolute positions: distance does not decay (alpha < 0.5)",
                  figure="rc_pos")  # fmt: skip
    for i, dt in enumerate(dts[1:], start=1):
        c = collapse[i]
        if not math.isfinite(c):
            for what in ("outputs_coincide", "unresolved"):
                led.not_evaluated(f"collapse_{dt}_{what}", source=SOURCE,
                                  reason=f"the float64 distance never falls below eps({dt}) |h| up to n = {ns[-1]}",
                                  statement=f"beyond collapse_n({dt}): {what.replace('_', ' ')}")  # fmt: skip
            continue
        after = ns >= c
        frac = float(per[dt]["argmax_equal"][:, after].mean())
        led.close(f"collapse_{dt}_outputs_coincide", measured=frac, expected=1.0, atol=0.0,
                  source=SOURCE, requires_full=dt != "float16",
                  why="below the format's resolution the two states differ by rounding only; one flipped "
                      "argmax among the samples would show the format still separates them",
                  deviation="a near-tie of the two largest logits can still flip on rounding noise",
                  statement=f"for n >= collapse_n({dt}) the next-token argmax of the two sequences coincides "
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
    if L >= 2:
        # path counting: with L >= 2 early positions have more paths, so the first token's sensitivity
        # exceeds a middle token's (theory: strictly decreasing profile for A = I)
        ratio = float(sens[-1, 0] / sens[-1, config.sens_len // 2])
        led.bound("sensitivity_first_exceeds_middle", measured=ratio, bound=1.0, relation=">",
                  source=f"{SOURCE}; path counting (theory module, item 4)",
                  why="the path count of L >= 2 uniform layers is strictly decreasing in i",
                  deviation=None if config.attention == "uniform" and config.norm == "none" else
                  "softmax logits, norms and MLPs reweight paths; the count is a qualitative guide only",
                  statement="|dh_last/dx_1| > |dh_last/dx_(T/2)| (last layer)", figure="rc_sensitivity")  # fmt: skip
