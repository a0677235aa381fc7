"""The recall and retrieval tasks: multi-query associative recall (MQAR), planted-key retrieval (a needle among
distractors) and nearest-neighbour search (the value of the key a query aligns with most).

Each stores keys (and values) in the context and asks for what a query retrieves; loss and accuracy count only
the query positions. Every task is a frozen dataclass validated on construction whose ``config()`` goes into
checkpoint cache keys; every draw uses the generator it is given, in the fixed order its docstring states.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from analysis.core.validation import check_choice, check_int
from analysis.data.task_base import _check_batch, _check_generator, _check_outputs

# ================================================================================================
# Multi-query associative recall (MQAR)


@dataclass(frozen=True)
class AssociativeRecall:
    """Multi-query associative recall (Zoology's MQAR; the delta rule's home ground, 003#30).

    A sequence stores ``n_pairs`` key-value pairs -- distinct keys drawn without replacement from
    ``n_keys`` key ids, values drawn with replacement from ``n_values`` value ids (disjoint ranges) --
    then asks ``n_queries`` of the stored keys (a random subset without replacement, in random order,
    all of them when ``None``); the answer to a query is its key's value. Loss and accuracy count only
    the query positions. Two layouts:

    * ``"tokens"``: ids ``k_1 v_1 ... k_N v_N q_1 ... q_M`` with keys ``0..n_keys-1`` and values
      ``n_keys..n_keys+n_values-1`` (input="tokens", vocab ``n_keys + n_values``); targets (B, T) hold the
      value id at each query position and -1 elsewhere; the logits are (B, T, n_keys + n_values).
    * ``"paired"``: one position per pair, the vector ``[one-hot key | one-hot value]`` (input="vectors",
      ``d_in = n_keys + n_values``), then one position per query, ``[one-hot key | 0]``; targets (B, T) hold
      the value index ``0..n_values-1`` at the query positions and -1 elsewhere; the read-out is
      (B, T, n_values) (output="linear", ``d_out = n_values``). A key and its value share a position, so
      no token shift is needed before the memory is written (the zoo has no short convolution, without
      which an additive linear-attention layer without positions cannot move a key onto its value).

    Draw order from the generator (fixed): ``rand(B, n_keys)`` (keys: its argsort), ``randint`` values
    (B, N), ``rand(B, N)`` (queries: its argsort).
    """

    n_pairs: int = 8
    n_keys: int = 64
    n_values: int = 64
    n_queries: int | None = None  # None: every stored key is asked
    layout: str = "paired"  # "paired" | "tokens"

    def __post_init__(self) -> None:
        check_int("n_keys", self.n_keys, minimum=1, maximum=100_000)
        check_int("n_values", self.n_values, minimum=1, maximum=100_000)
        check_int("n_pairs", self.n_pairs, minimum=1, maximum=self.n_keys)
        if self.n_queries is not None:
            check_int("n_queries", self.n_queries, minimum=1, maximum=self.n_pairs)
        check_choice("layout", self.layout, ("paired", "tokens"))

    @property
    def name(self) -> str:
        return f"mqar_{self.layout}_n{self.n_pairs}_k{self.n_keys}_v{self.n_values}_q{self.queries}"

    @property
    def queries(self) -> int:
        return self.n_pairs if self.n_queries is None else self.n_queries

    @property
    def input_kind(self) -> str:
        return "tokens" if self.layout == "tokens" else "vectors"

    @property
    def vocab_size(self) -> int:
        return self.n_keys + self.n_values if self.layout == "tokens" else 0

    @property
    def d_in(self) -> int:
        return 0 if self.layout == "tokens" else self.n_keys + self.n_values

    @property
    def d_out(self) -> int:
        return 0 if self.layout == "tokens" else self.n_values

    @property
    def seq_len(self) -> int:
        return (2 if self.layout == "tokens" else 1) * self.n_pairs + self.queries

    def config(self) -> dict:
        return {"kind": "associative_recall", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
        """``(keys (B, N), values (B, N), asked (B, M))``: key ids, value indices ``0..n_values-1`` and the
        indices into the N pairs of the queried keys."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, dev = batch_size, self.n_pairs, generator.device
        keys = torch.rand(B, self.n_keys, generator=generator, device=dev).argsort(-1)[:, :N]
        values = torch.randint(0, self.n_values, (B, N), generator=generator, device=dev)
        asked = torch.rand(B, N, generator=generator, device=dev).argsort(-1)[:, : self.queries]
        return keys.cpu(), values.cpu(), asked.cpu()

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)`` in the layout of the class docstring."""
        keys, values, asked = self.draw(batch_size, generator)
        q_keys, answers = keys.gather(1, asked), values.gather(1, asked)  # (B, M)
        B, N, M = batch_size, self.n_pairs, self.queries
        if self.layout == "tokens":
            pairs = torch.stack([keys, values + self.n_keys], dim=-1).reshape(B, 2 * N)
            inputs = torch.cat([pairs, q_keys], dim=1)
        else:
            inputs = torch.zeros(B, N + M, self.n_keys + self.n_values, dtype=dtype)
            inputs[:, :N].scatter_(-1, keys[..., None], 1.0)
            inputs[:, :N].scatter_(-1, values[..., None] + self.n_keys, 1.0)
            inputs[:, N:].scatter_(-1, q_keys[..., None], 1.0)
        targets = torch.full((B, self.seq_len), -1, dtype=torch.long)
        targets[:, -M:] = answers + (self.n_keys if self.layout == "tokens" else 0)
        return inputs.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) over the query positions only (targets >= 0)."""
        width = self.vocab_size if self.layout == "tokens" else self.n_values
        _check_outputs(outputs, 3, width, f"(B, T, {width})")
        return F.cross_entropy(outputs.reshape(-1, width), targets.reshape(-1), ignore_index=-1)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, M) bool: the arg-max at each query position is the answer."""
        asked = targets >= 0
        hits = outputs.argmax(-1) == targets
        return hits[asked].view(targets.shape[0], -1)


# ================================================================================================
# Planted-key retrieval (a needle among distractors; the attention_entropy probe, seed 000#6)


@dataclass(frozen=True)
class PlantedKeyRetrieval:
    """One query, one planted key among ``n_pairs - 1`` distractors; the answer is the planted key's value.

    A sequence holds ``n_pairs`` key-value pairs, one per position (the paired layout of
    :class:`AssociativeRecall`: the vector ``[one-hot key | one-hot value]``, ``d_in = n_keys + n_values``), then
    one query position ``[one-hot q | 0]``. The planted pair, at a uniform random position, has key ``q``; every
    other pair's key is drawn uniformly from the ``n_keys - 1`` keys other than ``q`` (distractor keys may repeat:
    the context can grow far past ``n_keys``, and exactly one key matches the query at every length); values are
    uniform over ``n_values``. Targets (B, T) hold the planted value index at the query position (the last) and -1
    elsewhere; the read-out is (B, T, n_values) (output="linear", ``d_out = n_values``).

    Draw order from the generator (fixed): query keys ``randint(n_keys)`` (B,), distractor keys
    ``randint(n_keys - 1)`` (B, N) (shifted past q), values ``randint(n_values)`` (B, N), planted positions
    ``randint(N)`` (B,).
    """

    n_pairs: int = 64
    n_keys: int = 32
    n_values: int = 8

    def __post_init__(self) -> None:
        check_int("n_pairs", self.n_pairs, minimum=1, maximum=1_000_000)
        check_int("n_keys", self.n_keys, minimum=2, maximum=100_000)
        check_int("n_values", self.n_values, minimum=2, maximum=100_000)

    @property
    def name(self) -> str:
        return f"planted_n{self.n_pairs}_k{self.n_keys}_v{self.n_values}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return self.n_keys + self.n_values

    @property
    def d_out(self) -> int:
        return self.n_values

    @property
    def seq_len(self) -> int:
        return self.n_pairs + 1

    def config(self) -> dict:
        return {"kind": "planted_key_retrieval", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(keys (B, N), values (B, N), planted (B,), query (B,))``: key ids, value indices, the planted pair's
        position and the query key (``keys[b, planted[b]] == query[b]``, no other key equals it)."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, dev = batch_size, self.n_pairs, generator.device
        query = torch.randint(0, self.n_keys, (B,), generator=generator, device=dev)
        keys = torch.randint(0, self.n_keys - 1, (B, N), generator=generator, device=dev)
        keys = keys + (keys >= query[:, None]).long()  # every key but the query's
        values = torch.randint(0, self.n_values, (B, N), generator=generator, device=dev)
        planted = torch.randint(0, N, (B,), generator=generator, device=dev)
        keys = keys.scatter(1, planted[:, None], query[:, None])
        return keys.cpu(), values.cpu(), planted.cpu(), query.cpu()

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs (B, N + 1, d_in), targets (B, N + 1))`` in the layout of the class docstring."""
        return self.encode(*self.draw(batch_size, generator), device=device, dtype=dtype)

    def encode(self, keys: Tensor, values: Tensor, planted: Tensor, query: Tensor, device="cpu", dtype=torch.float32):
        """The inputs and targets of a :meth:`draw`."""
        B, N = keys.shape
        inputs = torch.zeros(B, N + 1, self.d_in, dtype=dtype)
        inputs[:, :N].scatter_(-1, keys[..., None], 1.0)
        inputs[:, :N].scatter_(-1, values[..., None] + self.n_keys, 1.0)
        inputs[:, N].scatter_(-1, query[:, None], 1.0)
        targets = torch.full((B, N + 1), -1, dtype=torch.long)
        targets[:, N] = values.gather(1, planted[:, None])[:, 0]
        return inputs.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) at the query position only (targets >= 0)."""
        _check_outputs(outputs, 3, self.n_values, f"(B, T, {self.n_values})")
        return F.cross_entropy(outputs.reshape(-1, self.n_values), targets.reshape(-1), ignore_index=-1)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B,) bool: the arg-max at the query position is the planted value."""
        return outputs[:, -1].argmax(-1) == targets[:, -1]


# ================================================================================================
# Nearest neighbour: the value of the key a query aligns with most (the attention_only probe, seed 004#72)


@dataclass(frozen=True)
class NearestNeighbour:
    """For each query, output the key it aligns with most among the ``N`` keys of its sequence.

    The target of Amsel, Yehudai and Bruna ("On the Benefits of Rank in Attention Layers", seed 004#72): a
    nearest-neighbour search that one full-rank attention head represents (logits ``beta q . k_j``, value the key
    itself, ``beta -> inf``) but low-rank heads do not. Here the value of a key is the key itself (the paper's
    nearest-neighbour function outputs the neighbour), so the target of query ``q`` is ``k_(j*)`` with
    ``j* = argmax_j q . k_j``.

    A sequence is ``N = n_keys`` keys followed by ``M = n_queries`` queries (``seq_len = N + M``), as vectors of
    width ``2d``: a key ``k_j`` (uniform on the unit sphere of R^d) fills channels ``[:d]``, a query ``q_m`` fills
    channels ``[d:]`` (so a head reads "query" and "key" from different channels, and a query's own token, if it
    were visible, would carry no key). Queries are Gaussian ``N(0, I/d)``: their directions are uniform on the
    sphere, so ``j*`` has the law it has for unit queries, and orthogonal projections of a query are independent
    (what the theory's additive floor, :func:`analysis.theory.attention_only.additive_floor`, uses).
    :meth:`attn_bias` hides every query token from every row, so a query attends to the ``N`` keys only (and key
    rows, under the causal mask, to the keys before them). Targets (B, M, d) are the nearest keys; ``loss`` is
    the squared error summed over the ``d`` coordinates and averaged over the queries: since ``|k_(j*)| = 1``
    it is the relative MSE ``E|yhat - k_(j*)|^2 / E|k_(j*)|^2``. Draws (fixed order): ``randn`` (B, N, d) keys,
    then ``randn`` (B, M, d) queries; the nearest key is found in float64.
    """

    d: int = 16
    n_keys: int = 16  # N
    n_queries: int = 16  # M

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=1, maximum=1024)
        check_int("n_keys", self.n_keys, minimum=1, maximum=10_000)
        check_int("n_queries", self.n_queries, minimum=1, maximum=10_000)

    @property
    def name(self) -> str:
        return f"nearest_neighbour_d{self.d}_N{self.n_keys}_M{self.n_queries}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return 2 * self.d

    @property
    def d_out(self) -> int:
        return self.d

    @property
    def seq_len(self) -> int:
        return self.n_keys + self.n_queries

    def config(self) -> dict:
        return {"kind": "nearest_neighbour", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``(keys (B, N, d), queries (B, M, d))`` in float64 (keys unit, queries ``N(0, I/d)``)."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, M, d, dev = batch_size, self.n_keys, self.n_queries, self.d, generator.device
        keys = torch.randn(B, N, d, generator=generator, device=dev).cpu().to(torch.float64)
        queries = torch.randn(B, M, d, generator=generator, device=dev).cpu().to(torch.float64) / d**0.5
        return keys / keys.norm(dim=-1, keepdim=True), queries

    @staticmethod
    def nearest(keys: Tensor, queries: Tensor) -> Tensor:
        """(B, M, d): ``k_(j*)`` with ``j* = argmax_j q_m . k_j`` for each query."""
        j = (queries @ keys.transpose(-1, -2)).argmax(-1)  # (B, M)
        return keys.gather(1, j[..., None].expand(*j.shape, keys.shape[-1]))

    def inputs(self, keys: Tensor, queries: Tensor) -> Tensor:
        """(B, N + M, 2d): keys in channels ``[:d]``, queries in ``[d:]``."""
        return torch.cat([F.pad(keys, (0, self.d)), F.pad(queries, (self.d, 0))], dim=1)

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        keys, queries = self.draw(batch_size, generator)
        x, y = self.inputs(keys, queries), self.nearest(keys, queries)
        return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)

    def attn_bias(self, T: int, device="cpu", dtype=torch.float32) -> Tensor:
        """(T, T): ``-inf`` on every query column (``j >= N``), 0 elsewhere: queries see the keys only."""
        check_int("T", T, minimum=self.n_keys + 1)
        bias = torch.zeros(T, T, dtype=dtype, device=device)
        bias[:, self.n_keys :] = float("-inf")
        return bias

    def errors(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, M): ``|yhat_m - k_(j*)|^2`` at each query position (outputs (B, N + M, d))."""
        _check_outputs(outputs, 3, self.d, f"(B, {self.seq_len}, {self.d})")
        if outputs.shape[1] != self.seq_len:
            raise ValueError(f"outputs must have {self.seq_len} positions, got {outputs.shape[1]}")
        return ((outputs[:, self.n_keys :] - targets.to(outputs.dtype)) ** 2).sum(-1)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Relative MSE: squared error summed over coordinates, mean over the queries (``|k_(j*)| = 1``)."""
        return self.errors(outputs, targets).mean()
