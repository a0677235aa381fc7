"""Width and depth as axes: muP and depth-muP's coordinate checks, and Muon's orthogonalisation.

Theory: :mod:`analysis.theory.width` (the exponents), :mod:`analysis.theory.muon` (the Newton-Schulz map); the
parameterisations themselves: :mod:`analysis.zoo.parameterisation` (``ModelConfig.parameterisation``: standard,
mup, depth_mup, and the trainer's per-parameter learning rates).

1. ``width``: models of every width in ``widths`` (softmax attention and Gated DeltaNet), standard and muP, one
   sequence per seed: the sizes at initialisation (attention scores, branch outputs, logits) and every layer's own
   update ``dW x`` after the first step of Adam and of SGD; their width exponents against the derived ones, the other
   parameterisation's the alternative (seeds 003#17 and Yang et al. 2022).
2. ``trajectory``: the coordinate-check figure, activation sizes over the first Adam steps, one line per width
   (no claims).
3. ``depth``: the same over depth: standard against depth-muP with alpha 1/2 (Depth-muP) and 1 (CompleteP): the
   branches' sum at initialisation, one block's first update and the final stream's change against ``L``.
4. ``transfer``: learning-rate transfer (003#17): a 2-layer character LM per width and learning rate, standard and
   muP, Adam and SGD, softmax attention and Gated DeltaNet: the loss-optimal rate's drift with width, 0 under muP
   (the alternative: the standard parameterisation's derived -1) and below 0 under the standard one.
5. ``newton_schulz``: Muon's iteration on Gaussian matrices against the closed form of its singular-value map, and the
   band ``[m, M]`` every singular value above the entry threshold lands in (seed 004#16).
6. ``muon_vs_adamw``: Muon against AdamW trained (004#16): a character LM per width in ``muon_widths``, each
   optimiser's rate tuned, the updates Muon needs to reach AdamW's final loss over AdamW's, against the paper's 48-52%
   (the alternative: no advantage, 1).
7. ``aspect_ratio``: the width-depth aspect ratio at a fixed size (000#69): Pre-LN, LayerNorm Scaling and Full
   Attention Residuals (``ModelConfig(residual="attnres")``) trained at shapes from shallow-wide to deep-narrow; whether
   the last step deeper lowers the loss.
"""

from __future__ import annotations

from analysis.probing.parts import part_of, probe_functions
from probes.parameterisation import (
    aspect_ratio,
    declarations,  # noqa: F401  (registers the declared claims)
    depth,
    muon_vs_adamw,
    newton_schulz,
    trajectory,
    transfer,
    width,
)
from probes.parameterisation.config import DEPTH_RUNS, MIXER, MIXERS, OPTIMIZERS, WIDTH_PARAMETERISATIONS, Config

NAME = "parameterisation"
DESCRIPTION = (
    "muP and depth-muP coordinate checks (Adam, SGD; softmax, Gated DeltaNet), learning-rate transfer, Muon's "
    "Newton-Schulz map, Muon against AdamW trained and the width-depth aspect ratio."
)
VERSION = "2"  # 2: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = None  # builds its own models

PARTS = tuple(part_of(m) for m in (width, trajectory, depth, transfer, newton_schulz, muon_vs_adamw, aspect_ratio))

# one torch thread: the models are tiny (fastest, and it fixes the reduction order)
run, check_claims = probe_functions(NAME, PARTS, threads=1)

__all__ = [
    "DEPTH_RUNS",
    "DESCRIPTION",
    "MIXER",
    "MIXERS",
    "NAME",
    "OPTIMIZERS",
    "PARTS",
    "REQUIRES",
    "VERSION",
    "WIDTH_PARAMETERISATIONS",
    "Config",
    "check_claims",
    "run",
]
