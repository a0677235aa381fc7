"""Part ``oversquashing``: the last state's sensitivity to each position against path counting (Barbero et al.
2024; theory module, item 4), and the rank residual across depth."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.core.devices import model_device
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.theory import representational_collapse as th
from analysis.theory.signal_propagation import rank_residual
from analysis.zoo.hooks import resid_names, resolve_names, run_with_cache
from probes.representational_collapse.bands import claim_positive_mean
from probes.representational_collapse.config import BIDIRECTIONAL, Config
from probes.representational_collapse.models import Models, protocol_width
from probes.representational_collapse.sequences import draw_samples, lengths, make_pair

DESCRIPTION = "the last state's sensitivity to each position against path counting, and the rank residual"


@dataclass(frozen=True)
class Sensitivity:
    """The last state's sensitivity to each position per base, (bases, layer, position), for the linear-stack part."""

    per_base: np.ndarray


PROVIDES = (Sensitivity,)
FIELDS = ("sens_len", "sensitivity", "sens_bases")


def sensitivity(model, config: Config, vocab: int | None = None, chunk: int = 64) -> np.ndarray:
    """``|d h^l_last / d x_i|_F`` (B, L, T) by autograd w.r.t. ``hook_embed``, float64 model, ``sens_bases``
    random bases.

    The Frobenius norm needs one backward pass per output coordinate: the batch holds one copy of the
    sequence per coordinate, ``chunk`` coordinates at a time (the squared norms add over chunks).
    """
    gen = torch.Generator().manual_seed(config.seed + 15485863)  # sensitivity bases only
    T = config.sens.len
    seqs = torch.randint(0, (vocab or config.model.vocab_size) - 1, (config.sens.bases, T), generator=gen)
    dev = model_device(model)
    resid = resid_names(model.n_layers)
    names = ["hook_embed"] + resid
    resolve_names(model, names)
    with torch.no_grad():
        _, cache = run_with_cache(model, seqs[:1].to(dev), names=["hook_embed"])
    d = cache["hook_embed"].shape[-1]
    sq = np.zeros((config.sens.bases, len(resid), T))
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


def measure(ctx: Context) -> None:
    """The sensitivity of the last state to every position (per base, and their geometric mean), the path count
    of uniform layers with identity value maps, and the rank residual of the longest first sample's states.
    Puts the :class:`Sensitivity` for the linear-stack part."""
    config, shared = ctx.config, ctx.get(Models)
    ref = shared.models["float64"]
    L, B = ref.n_layers, config.sens.bases
    sens_b = sensitivity(ref, config, shared.vocab) if config.sensitivity else np.full((B, L, config.sens.len), np.nan)
    ctx.put(Sensitivity(sens_b))
    sens = np.exp(np.log(sens_b).mean(0))  # (L, T) geometric mean over bases
    path = th.path_sensitivity(config.sens.len, L) * math.sqrt(int(protocol_width(ref)))  # A = I: |I|_F = sqrt(d)
    # rank residual of the longest first sample's float64 states (sequence a)
    seq = make_pair(config, draw_samples(config, shared.vocab), 0, int(lengths(config)[-1]))[0]
    names = resid_names(L, "depth")
    with torch.no_grad():
        _, cache = run_with_cache(ref, seq[None].to(model_device(ref)), names=names)
    rr = np.array([float(rank_residual(cache[k][0].cpu())) for k in names])
    ctx.coords.update(
        layer=np.arange(1, L + 1),
        position=np.arange(1, config.sens.len + 1),
        depth=np.arange(L + 1),
        sens_base=np.arange(B),
    )
    ctx.data.update(
        sensitivity=(("layer", "position"), sens),
        sensitivity_samples=(("sens_base", "layer", "position"), sens_b),
        path_count=(("position",), path),
        rank_residual=(("depth",), rr),
    )
    mid = config.sens.len // 2
    ctx.scalars["sens_first_over_middle"] = float(np.exp(np.log(sens_b[:, -1, 0] / sens_b[:, -1, mid]).mean()))


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    claim_sensitivity(led, rs)


def _sensitivity_ratio(r: Result) -> np.ndarray:
    """Per sensitivity base: ln(|dh_last/dx_1| / |dh_last/dx_(T/2)|) at the last layer."""
    S = r.data["sensitivity_samples"].sel(layer=int(r.data["layer"].size)).values  # (bases, T)
    return np.log(S[:, 0] / S[:, r.config.sens.len // 2])


def claim_sensitivity(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Over-squashing by path counting: with L >= 2 early tokens have more paths to the last position, so
    the last state is more sensitive to the first token than to a middle one (theory module, item 4)."""
    r = rs[0]
    config, L = r.config, int(r.data["layer"].size)
    name = "sensitivity_first_exceeds_middle"
    if L < 2:
        return
    if not r.scalars["causal"] or not config.sensitivity:
        reason = BIDIRECTIONAL if not r.scalars["causal"] else "sensitivity=False: not measured"
        led.judge(name, reason=reason)
        return
    xs = [_sensitivity_ratio(x) for x in rs]
    claim_positive_mean(
        led,
        name,
        rs,
        xs,
        "sensitivity bases",
        f"{xs[0].size} random bases (at least 64 eps64: the uniform linear stack's profile does not depend on the "
        "base, its spread is rounding)",
        se_floor=64 * th.EPS["float64"],  # a linear stack's profile is input-independent: bases agree to rounding
        statement="ln(|dh_last/dx_1| / |dh_last/dx_(T/2)|) > 0 at the last layer (mean over bases"
        + (" and seeds)" if len(rs) > 1 else ")"),
    )
