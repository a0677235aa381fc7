"""The protocol's sequences and the pair distances: the length grid, the samples, the pairs of each family,
the right-padded batches and the last-token states of every pair in every dtype."""

from __future__ import annotations

import numpy as np
import torch

from analysis.core.devices import model_device
from analysis.core.progress import bar
from analysis.zoo.hooks import resid_names, run_with_cache
from analysis.zoo.model import DTYPES
from probes.representational_collapse import pairs
from probes.representational_collapse.config import Config


def lengths(config: Config) -> np.ndarray:
    """The n grid: about ``n_lengths`` integers spaced evenly in ln n (duplicates removed)."""
    return np.unique(np.round(np.geomspace(config.min_len, config.max_len, config.n_lengths)).astype(int))


def draw_samples(config: Config, vocab: int | None = None) -> dict[str, torch.Tensor]:
    """Per sample: a random base of ``max_len`` tokens (prefixes give every n), (one, zero) and a replacement.

    Ids lie in ``[0, vocab - 1)`` (``vocab`` defaults to ``config.model.vocab_size``; the last id is the separator)."""
    gen = torch.Generator().manual_seed(config.seed + 7919)  # data only
    V = (vocab or config.model.vocab_size) - 1  # the last id is reserved for separators
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
            pair,
            pairs.with_separators,
            int(samples.get("separator", config.model.vocab_size - 1)),
            config.separator_every,
        )
    return pair


def batch(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
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
        ids, idx = batch([x for p in pairs for x in p])  # rows: a_0, b_0, a_1, b_1, ...
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


def gmean(x: np.ndarray) -> np.ndarray:
    """Geometric mean over the first axis (a zero gives 0, without a warning)."""
    with np.errstate(divide="ignore"):
        return np.exp(np.log(x).mean(0))
