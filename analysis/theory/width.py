"""Width and depth exponents of the coordinate check: how the size of a layer's output, and of the change one update
makes to it, grows with the width ``d`` (or the depth ``L``) under the standard parameterisation, muP and depth-muP
(the zoo's ``ModelConfig.parameterisation``; the rules are :mod:`analysis.zoo.parameterisation`'s).

A quantity is ``Theta(d^e)``; ``e`` is its *exponent*, what a log-log fit over widths measures. "Coordinate size" is
the root mean square of a tensor's entries. The layers are classed as the coordinate check reports them:

* ``embed``: token embeddings (fan-in the vocabulary, finite); ``norm``: norm gains (a vector of width d);
* ``qk``: the query and key matrices; ``hidden``: the value, output and MLP matrices (fan-in and fan-out grow);
* ``gate``: a matrix from the stream to one scalar per head (Gated DeltaNet's decay gate ``W_gate`` and write
  strength ``W_beta``); ``readout``: the read-out ``head`` (fan-in d, fan-out the vocabulary).

**Own update after the first step.** For a layer ``y = W x`` the update's own effect is ``dy = dW x`` with ``x`` the
layer's input at initialisation (the change that arrives through ``x`` is left out: it is the layers below's).

*Adam.* The first bias-corrected step is ``m/(sqrt(v) + eps) = g/(|g| + eps)``, the sign of the gradient (``eps``
far below ``|g|``), so ``dW = -lr_W sign(G)`` with ``G = sum_b delta_b x_b^T`` over the batch's positions. For an input
``x`` of the batch, ``sign(G_ij)`` is correlated with ``x_j`` by an amount that does not depend on d, so
``dy_i = -lr_W sum_j sign(G_ij) x_j = Theta(lr_W fan_in)``: the exponent is that of ``lr_W`` plus that of the fan-in
(times the layer's output multiplier). Standard (one learning rate): 1 for every layer whose fan-in grows (``qk``,
``hidden``, ``gate``, ``readout``), 0 for ``embed`` and ``norm`` (``dy = lr sign(...) x`` entrywise). muP: 0 for
every layer (``lr / m`` where the fan-in grows; the read-out's ``1/m`` multiplier instead).

*SGD.* ``dW = -lr_W G``, so ``dy = -lr_W sum_b delta_b (x_b . x) = Theta(lr_W |delta| fan_in)``, and the exponent adds
that of the backward signal ``delta`` at the layer's output, at initialisation, where backward and forward vectors
are uncorrelated:

* the residual stream: ``delta = W_head^T (p - y)`` over a finite vocabulary: ``d^(-1/2)`` standard (``W_head``
  entries ``N(0, 1/d)``), ``d^(-1)`` muP (``N(0, 1/d0)`` divided by ``m = d/d0``); the value, output and MLP matrices
  pass it on at the same coordinate size;
* queries and keys: ``delta_q = scale sum_j g_j k_j`` with ``g_j = A_j (v_j - z) . dL/dz`` a sum of ``d_head``
  uncorrelated terms, so ``|delta_q| = scale sqrt(d_head) |delta|``: ``|delta|`` standard (scale ``1/sqrt(d_head)``),
  ``d^(-1/2) |delta|`` muP (scale ``1/d_head``);
* a gate's scalar: ``dL/dg = sum_i dL/dz_i dz_i/dg`` over ``d_head`` uncorrelated terms: ``sqrt(d) |delta|``;
* the read-out's logits: ``p - y``, Theta(1).

So, exponent = lr + delta + fan-in (+ multiplier):

=========  ===========================  ==================================
layer      standard                     muP
=========  ===========================  ==================================
embed      0 - 1/2 + 0 = -1/2           1 - 1 + 0 = 0
norm       0 - 1/2 + 0 = -1/2           1 - 1 + 0 = 0
qk         0 - 1/2 + 1 = 1/2            0 - 3/2 + 1 = -1/2
hidden     0 - 1/2 + 1 = 1/2            0 - 1 + 1 = 0
gate       0 + 0 + 1 = 1                -1 - 1/2 + 1 = -1/2
readout    0 + 0 + 1 = 1                -1 (mult) + 1 (lr) + 0 + 1 = 0
=========  ===========================  ==================================

**Sizes at initialisation.** Every layer's output has O(1) coordinates under both (fan-in initialisation), but two:
the attention scores ``scale q . k`` (a sum of ``d_head`` uncorrelated terms: ``sqrt(d_head) scale``: 0 standard,
-1/2 muP) and the logits (``W_head h``: 0 standard; ``(1/m) W_head h`` with ``W_head`` at the base width's
``N(0, 1/d0)``: ``d^(-1) sqrt(d) = d^(-1/2)`` muP). These are the two quantities ``mup``'s coordinate check allows to
shrink at init.

**Depth** (width fixed, ``L`` blocks, pre-LN, every branch times ``s_L = (L0/L)^alpha``; standard: ``alpha = 0`` and
no learning-rate factor):

* the branches' sum at initialisation, ``x_L - x_0``: a pre-LN branch reads a normalised input, so each branch's
  output has the same O(1) size, and the ``2L`` branches are uncorrelated at initialisation: RMS
  ``s_L sqrt(2L) c``, exponent ``1/2 - alpha`` (1/2 standard, 0 for alpha = 1/2, -1/2 for alpha = 1);
* one block's own update after the first Adam step: ``s_L lr_L Theta(fan_in)`` with ``lr_L ~ L^(alpha - 1)``:
  exponent ``-alpha + alpha - 1 = -1`` under depth-muP for both alphas, 0 standard. Under SGD the branch multiplier
  also scales the gradient, ``s_L^2 lr_L`` with ``lr_L ~ L^(2 alpha - 1)``: again -1 (0 standard);
* the final stream's change after the first update: the blocks' own updates all follow the one stream gradient, so
  they add coherently: ``L`` times one block's, exponent 0 under depth-muP, 1 standard (to leading order: the
  changes that reach a block through its input are a product of two small factors when ``lr`` is small).
"""

from __future__ import annotations

import numpy as np

PARAMETERISATIONS = ("standard", "mup")
OPTIMIZERS = ("adam", "sgd")
MIXERS = ("softmax", "gated_delta")
LAYERS = ("embed", "norm", "qk", "v", "o", "mlp", "gate", "readout")
_HIDDEN = ("qk", "v", "o", "mlp")
# the layers each mixer has (softmax attention has no gate)
MIXER_LAYERS = {"softmax": tuple(x for x in LAYERS if x != "gate"), "gated_delta": LAYERS}
# the exponents of the coordinate sizes at initialisation that differ from 0
_INIT = {"standard": {"attn_scores": 0.0, "logits": 0.0}, "mup": {"attn_scores": -0.5, "logits": -0.5}}


def _check(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _normalise(optimizer: str, parameterisation: str) -> tuple[str, str]:
    optimizer = "adam" if optimizer == "adamw" else optimizer
    parameterisation = "mup" if parameterisation == "depth_mup" else parameterisation
    _check("optimizer", optimizer, OPTIMIZERS)
    _check("parameterisation", parameterisation, PARAMETERISATIONS)
    return optimizer, parameterisation


def input_exponent(layer: str, mixer: str) -> float:
    """Width exponent of the coordinate size of ``layer``'s input at initialisation: 0 (a normalised stream, a
    softmax average of values, an MLP's activations), but Gated DeltaNet's read-out ``z = S q`` feeding ``o``: its
    unit queries and keys meet at ``q . k = O(d^(-1/2))``, so ``z`` has coordinates ``d^(-1/2)``."""
    return -0.5 if (mixer == "gated_delta" and layer == "o") else 0.0


def backward_exponent(layer: str, mixer: str, parameterisation: str) -> float:
    """Width exponent of the backward signal ``delta`` at ``layer``'s output at initialisation (module docstring):
    the stream's ``-1/2`` (standard) or ``-1`` (mup), then per layer: queries and keys ``+ log_d(scale sqrt(d_head))``
    for softmax (0 standard, -1/2 mup) and ``-1/2`` for Gated DeltaNet (through the unit normalisation, whatever
    the scale); Gated DeltaNet's values ``-1/2`` (read through ``q . k``); its gates' scalars the stream's (``d_head``
    terms of ``delta_z`` times ``dz/dg = O(d^(-1/2))``); the read-out's logits 0 (standard) or ``-1`` (mup: the
    multiplier ``1/m`` is in the gradient)."""
    stream = -0.5 if parameterisation == "standard" else -1.0
    if layer == "readout":
        return 0.0 if parameterisation == "standard" else -1.0
    if layer == "qk":
        if mixer == "gated_delta":
            return stream - 0.5
        return stream + (0.0 if parameterisation == "standard" else -0.5)
    if layer == "v" and mixer == "gated_delta":
        return stream - 0.5
    return stream


def lr_exponent(layer: str, optimizer: str, parameterisation: str) -> float:
    """Width exponent of ``layer``'s learning rate (:mod:`analysis.zoo.parameterisation`'s table; 0 standard)."""
    optimizer, parameterisation = _normalise(optimizer, parameterisation)
    if parameterisation == "standard":
        return 0.0
    if layer in _HIDDEN:
        return -1.0 if optimizer == "adam" else 0.0
    if layer == "gate":
        return -1.0
    return 0.0 if optimizer == "adam" else 1.0  # readout, embed, norm


def own_update_exponent(layer: str, optimizer: str, parameterisation: str, mixer: str = "softmax") -> float:
    """Width exponent of ``dW x`` after the first update of ``optimizer`` ("adam" covers adamw) under
    ``parameterisation`` ("standard" | "mup"; depth_mup is mup in width) for a ``layer`` of :data:`LAYERS` of a model
    with token ``mixer``: Adam ``lr + fan_in + x (+ multiplier)``, SGD ``lr + delta + fan_in + 2 x (+ multiplier)``
    (module docstring), ``fan_in`` 1 where it grows (all but ``embed`` and ``norm``), the read-out's multiplier -1
    under mup."""
    optimizer, parameterisation = _normalise(optimizer, parameterisation)
    _check("mixer", mixer, MIXERS)
    _check("layer", layer, MIXER_LAYERS[mixer])
    fan_in = 0.0 if layer in ("embed", "norm") else 1.0
    mult = -1.0 if (layer == "readout" and parameterisation == "mup") else 0.0
    x = input_exponent(layer, mixer)
    lr = lr_exponent(layer, optimizer, parameterisation)
    if optimizer == "adam":
        return lr + fan_in + x + mult
    return lr + backward_exponent(layer, mixer, parameterisation) + fan_in + 2.0 * x + mult


INIT_QUANTITIES = ("attn_scores", "attn_out", "mlp_out", "logits")


def init_exponent(quantity: str, parameterisation: str, mixer: str = "softmax") -> float:
    """Width exponent of a coordinate size at initialisation (:data:`INIT_QUANTITIES`): the attention scores
    (softmax only) and the logits shrink like ``d^(-1/2)`` under mup, 0 standard; Gated DeltaNet's branch output
    ``W_o z`` is ``d^(-1/2)`` under both (its read-out ``z``, :func:`input_exponent`); every other output 0."""
    _, parameterisation = _normalise("adam", parameterisation)
    _check("mixer", mixer, MIXERS)
    _check("quantity", quantity, INIT_QUANTITIES if mixer == "softmax" else INIT_QUANTITIES[1:])
    if quantity == "attn_out":
        return input_exponent("o", mixer)
    return _INIT[parameterisation].get(quantity, 0.0)


def depth_alpha(parameterisation: str, alpha: float) -> float:
    """The branch exponent a run uses: ``alpha`` under depth_mup, 0 otherwise (no branch scaling)."""
    return float(alpha) if parameterisation == "depth_mup" else 0.0


def branch_sum_exponent(parameterisation: str, alpha: float = 0.5) -> float:
    """Depth exponent of the RMS of ``x_L - x_0`` (the branches' sum) at initialisation: ``1/2 - alpha``."""
    return 0.5 - depth_alpha(parameterisation, alpha)


def block_update_exponent(parameterisation: str) -> float:
    """Depth exponent of one block's own update after the first step (Adam or SGD): -1 under depth_mup, 0 else."""
    return -1.0 if parameterisation == "depth_mup" else 0.0


def stream_update_exponent(parameterisation: str) -> float:
    """Depth exponent of the final stream's change after the first update (leading order): 0 depth_mup, 1 else."""
    return 1.0 + block_update_exponent(parameterisation)


def lr_drift(optimizer: str, parameterisation: str, mixer: str = "softmax") -> float:
    """Width exponent of the largest learning rate at which no layer's first update grows with width: minus the
    largest own-update exponent at a fixed rate (:func:`own_update_exponent`), the drift of the loss-optimal rate
    when the fastest-growing layer limits it (standard: -1, every fan-in-growing layer moving by lr d; mup: 0)."""
    _check("mixer", mixer, MIXERS)
    return 0.0 - max(own_update_exponent(layer, optimizer, parameterisation, mixer) for layer in MIXER_LAYERS[mixer])


def fan_in_correlation(d: int, batch: int, n_draws: int, rng) -> float:
    """Monte Carlo of the premise of the Adam rows: ``E|sum_j sign(G_ij) x_j| / d`` for ``G = sum_b delta_b x_b^T``
    with ``x`` the first of ``batch`` i.i.d. standard normal inputs and ``delta`` standard normal: a number that does
    not depend on ``d`` (so ``dW x = Theta(lr d)``). Returns the mean over ``n_draws`` draws of one output row."""
    total = 0.0
    for _ in range(n_draws):
        xs = rng.standard_normal((batch, d))
        delta = rng.standard_normal(batch)
        g = delta @ xs  # (d,): one row of G
        total += abs(float(np.sign(g) @ xs[0])) / d
    return total / n_draws
