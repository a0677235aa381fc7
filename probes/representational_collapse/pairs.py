"""The sequence pairs of the representational-collapse probe (Barbero et al. 2024), beside the probe
that uses them.

"Transformers need glasses!" prove (their Theorem 4.2) that a sequence and the same sequence with its
last token repeated once more have final-layer last-token representations whose distance goes to 0
as the length grows, and illustrate it with prompts made of repeated 1s ending in a 0 (counting):
1...10 with k ones against k+1 ones. Their over-squashing result is about the sensitivity of the last
token to an early token. The mitigation they point to is breaking the repetition up, e.g. with a
comma every few digits. The functions below build exactly these pairs as 1-D LongTensors; each pair
shares its last token, so the probe compares the same read-out position in both. No length cap:
lengths of 1024 and more are fine.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from analysis.core.validation import check_int, check_sequence


def _as_sequence(name: str, seq, vocab_size: int | None) -> Tensor:
    if isinstance(seq, Tensor):
        if seq.ndim != 1 or seq.dtype.is_floating_point or seq.dtype == torch.bool or seq.is_complex():
            raise ValueError(f"{name} must be a 1-D integer tensor, got shape {tuple(seq.shape)} {seq.dtype}")
        t = seq.detach().to("cpu", torch.long)
    else:
        check_sequence(name, seq, item_check=lambda n, v: check_int(n, v, minimum=0))
        t = torch.tensor(list(seq), dtype=torch.long)
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if (t < 0).any():
        raise ValueError(f"{name} must contain token ids >= 0")
    if vocab_size is not None:
        check_int("vocab_size", vocab_size, minimum=1)
        if (t >= vocab_size).any():
            raise ValueError(f"{name} must contain token ids < vocab_size={vocab_size}")
    return t


def _check_token(name: str, value, vocab_size: int | None) -> None:
    check_int(name, value, minimum=0, maximum=None if vocab_size is None else vocab_size - 1)


def repeat_last_pair(base: Tensor | Sequence[int], *, vocab_size: int | None = None) -> tuple[Tensor, Tensor]:
    """Theorem 4.2's pair: ``base`` (length n) and ``base`` with its last token repeated (length n+1)."""
    b = _as_sequence("base", base, vocab_size)
    return b.clone(), torch.cat([b, b[-1:]])


def repeated_token_pair(n: int, token: int, *, vocab_size: int | None = None) -> tuple[Tensor, Tensor]:
    """``[token] * n`` against ``[token] * (n + 1)``: :func:`repeat_last_pair` of a constant sequence."""
    check_int("n", n, minimum=1)
    _check_token("token", token, vocab_size)
    return repeat_last_pair(torch.full((n,), token, dtype=torch.long))


def counting_pair(k: int, one: int = 1, zero: int = 0, *, vocab_size: int | None = None) -> tuple[Tensor, Tensor]:
    """``[one] * k + [zero]`` against ``[one] * (k + 1) + [zero]`` (lengths k+1 and k+2)."""
    check_int("k", k, minimum=1)
    _check_token("one", one, vocab_size)
    _check_token("zero", zero, vocab_size)
    if one == zero:
        raise ValueError(f"one and zero must differ, both are {one}")
    a = torch.cat([torch.full((k,), one, dtype=torch.long), torch.tensor([zero])])
    b = torch.cat([torch.full((k + 1,), one, dtype=torch.long), torch.tensor([zero])])
    return a, b


def early_token_pair(
    base: Tensor | Sequence[int], position: int, replacement: int, *, vocab_size: int | None = None
) -> tuple[Tensor, Tensor]:
    """``base`` and a copy whose token at ``position`` is ``replacement`` (same length; over-squashing).

    ``position`` must lie before the last token, so both sequences end in the same token.
    """
    b = _as_sequence("base", base, vocab_size)
    check_int("position", position, minimum=0, maximum=b.numel() - 2 if b.numel() >= 2 else -1)
    _check_token("replacement", replacement, vocab_size)
    if int(b[position]) == replacement:
        raise ValueError(f"replacement must differ from base[{position}]={int(b[position])}")
    c = b.clone()
    c[position] = replacement
    return b.clone(), c


def with_separators(
    seq: Tensor | Sequence[int], sep_token: int, every: int, *, vocab_size: int | None = None
) -> Tensor:
    """Insert ``sep_token`` after every ``every`` tokens, never at the end (the mitigation).

    ``[1,1,1,1,1,1,1]`` with ``every=3`` -> ``[1,1,1,s,1,1,1,s,1]``; a sequence whose length is a multiple
    of ``every`` gets no trailing separator, so the last token (the read-out position) is unchanged.
    Output length: ``n + (n - 1) // every``.
    """
    s = _as_sequence("seq", seq, vocab_size)
    _check_token("sep_token", sep_token, vocab_size)
    check_int("every", every, minimum=1)
    n = s.numel()
    n_sep = (n - 1) // every
    out = torch.empty(n + n_sep, dtype=torch.long)
    pos = torch.arange(n)
    out[pos + pos // every] = s  # token i is shifted right by the separators before it
    sep_pos = (torch.arange(1, n_sep + 1) * (every + 1)) - 1  # (n_sep,)
    out[sep_pos] = sep_token
    return out


def apply_to_pair(pair: tuple[Tensor, Tensor], fn, *args, **kwargs) -> tuple[Tensor, Tensor]:
    """Apply a sequence transform (e.g. :func:`with_separators`) to both members of a pair."""
    return fn(pair[0], *args, **kwargs), fn(pair[1], *args, **kwargs)


__all__ = [
    "apply_to_pair",
    "counting_pair",
    "early_token_pair",
    "repeat_last_pair",
    "repeated_token_pair",
    "with_separators",
]
