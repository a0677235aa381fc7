"""The declared claims of parameterisation: muP's coordinate check for softmax transformers (Yang et al. 2022) and
for Gated DeltaNet (003#17), the depth check of Depth-muP (Yang et al. 2023) and CompleteP (Dey et al. 2025), and
Muon's Newton-Schulz map (004#16). The exponents are our derivations for the papers' settings (``derivation``): the
seed abstracts give no rules or exponents, so the rules are ``mup``'s and ours (:mod:`analysis.zoo.parameterisation`)
and a miss is a miss of our derivation."""

from analysis.claims.specs import ClaimSpec, declare
from probes.parameterisation.config import MUON_SOURCE, SEED_ASPECT, SOURCE, TRANSFER_RUNS

_WIDTH_SCOPE = (
    "by construction: one update from initialisation (the regime the exponents are derived in), float32 models at "
    "widths up to 512 with n_heads fixed (d_head grows with d), Adam's first step sign-like (eps far below |g|); the "
    "laws are asymptotic in width, so the band is a criterion, not a seed interval"
)
_DEPTH_SCOPE = (
    "by construction: pre-LN softmax blocks of a fixed width, one small Adam update from initialisation (the linear "
    "regime the leading-order exponents are derived in)"
)
_WIDTH_HYPOTHESIS = "the layer scales as under the other parameterisation (standard <-> muP)"


def _width(mixer: str, paper: str, what: str) -> ClaimSpec:
    return ClaimSpec(
        name=f"own_update_exponent_{mixer}_{{optimizer}}_{{parameterisation}}_{{layer}}",
        tests="derivation",
        comparison="law",
        paper=paper,
        statement=f"our derivation for {what}: the width exponent of a layer's own first-update dW x is lr + fan-in + "
        "input size (Adam, sign-like first step) or lr + backward signal + fan-in + 2 input size (SGD); muP keeps it "
        "at the base width's scaling where standard grows it",
        scope=_WIDTH_SCOPE,
        quantity="mean over seeds of the least-squares slope of ln RMS(dW x) on ln d_model",
        source=SOURCE,
        hypothesis=_WIDTH_HYPOTHESIS,
        figure="param_exponents",
        full=True,
    )


def _init(mixer: str, paper: str, what: str) -> ClaimSpec:
    return ClaimSpec(
        name=f"init_exponent_{mixer}_{{parameterisation}}_{{quantity}}",
        tests="derivation",
        comparison="law",
        paper=paper,
        statement=f"our derivation for {what}: at initialisation the attention scores and the logits are O(1) under "
        "standard and shrink like d^(-1/2) under muP (1/d_head logits, the read-out's 1/m); Gated DeltaNet's read-out "
        "of its state by unit queries and keys, and so its branch output, is d^(-1/2) under both",
        scope=_WIDTH_SCOPE,
        quantity="mean over seeds of the least-squares slope of ln RMS on ln d_model",
        source=SOURCE,
        hypothesis="the other parameterisation's scaling (for Gated DeltaNet's branch: an O(1) read-out, as softmax "
        "attention's average of values)",
        figure="param_exponents",
        full=True,
    )


def _depth(run: str, paper: str, what: str) -> ClaimSpec:
    return ClaimSpec(
        name=f"depth_exponent_{run}_{{quantity}}",
        tests="derivation",
        comparison="law",
        paper=paper,
        statement=f"our derivation for {what}: with branches times (L0/L)^alpha the branches' sum at initialisation "
        "grows like L^(1/2 - alpha), and with the Adam learning rate times (L0/L)^(1 - alpha) one block's first "
        "update is L^(-1) and the final stream's change O(1) (standard: L^0 and L)",
        scope=_DEPTH_SCOPE,
        quantity="mean over seeds of the least-squares slope of ln RMS on ln n_layers",
        source=SOURCE,
        hypothesis="the other depth scaling (depth-muP's for the standard run, the standard one's for depth-muP)",
        figure="param_depth",
        full=True,
    )


def _transfer(run: str) -> tuple[ClaimSpec, ...]:
    mixer, optimizer = run.split(":")
    name = run.replace(":", "_")
    paper = "003#17" if mixer == "gated_delta" else "yang2022"
    said = (
        "«stable learning-rate transfer across model widths under both AdamW and SGD, whereas standard "
        "parametrization fails to transfer»"
        if mixer == "gated_delta"
        else "muTransfer: under muP the optimal learning rate found at a small width stays optimal as the width grows, "
        "where under the standard parameterisation it shifts"
    )
    common = dict(
        paper=paper, figure="param_lr_transfer", full=True,
        scope=(f"lr_transfer_{name}_optimum_inside_grid",),
    )  # fmt: skip
    return (
        ClaimSpec(
            name=f"lr_transfer_{name}_optimum_inside_grid",
            tests="paper",
            comparison="scope",
            paper=paper,
            statement=f"{run}: the loss-optimal learning rate of every width, parameterisation and seed is bracketed "
            "by "
            "the grid (a hypothesis of reading its drift from the grid)",
            quantity="number of (parameterisation, width, seed) cells whose best rate is the grid's first or last",
            source="probes/parameterisation/transfer.py: optimal_lr",
            relation="<=",
            figure="param_lr_transfer",
            full=True,
        ),
        ClaimSpec(
            name=f"lr_transfer_{name}_mup_drift",
            comparison="prediction",
            # the seed gives no rules: for Gated DeltaNet the muP tested is ours (mup's table and our gate rule), so a
            # miss is a miss of our derivation, not of the paper's configuration
            tests="derivation" if mixer == "gated_delta" else "paper",
            statement=(
                f"our derivation for {said}: {run} under our muP rules for Gated DeltaNet (mup's table, our gate "
                "rule), the slope of log2 lr* on log2 d is 0"
                if mixer == "gated_delta"
                else f"{said}: {run} under muP, the slope of log2 lr* on log2 d is 0"
            ),
            quantity="per-seed least-squares slope of log2 (loss-optimal learning rate) on log2 d_model",
            source=SOURCE,
            hypothesis="the standard parameterisation's drift: the fastest-growing layer's first update grows like "
            "lr d, so the optimal rate falls like 1/d (analysis.theory.width.lr_drift)",
            **common,
        ),
        ClaimSpec(
            name=f"lr_transfer_{name}_standard_drift",
            comparison="sign",
            statement=f"{said}: {run} under the standard parameterisation, the loss-optimal rate falls with width "
            "(slope of log2 lr* on log2 d below 0)",
            quantity="per-seed least-squares slope of log2 (loss-optimal learning rate) on log2 d_model",
            source=SOURCE,
            hypothesis="the optimal learning rate transfers under the standard parameterisation too (slope 0)",
            sign=-1,
            tests="paper",
            **common,
        ),
    )


def _muon(width: str) -> ClaimSpec:
    return ClaimSpec(
        name=f"muon_adamw_updates_ratio_d{width}",
        tests="paper",
        comparison="prediction",
        paper="004#16",
        statement="«Muon reaches the target loss with 48-52% of the training calculated by AdamW»: the updates Muon "
        "needs to reach AdamW's final loss, over AdamW's, are about 0.5",
        scope=("muon_best_lr_inside_grid",),
        quantity="per-seed ratio of updates to AdamW's final held-out loss (mean of its last 3 evaluations), Muon over "
        "AdamW",
        source="seed 004#16 (0.48-0.52, the middle 0.5); probes/parameterisation/muon_vs_adamw.py: updates_to",
        hypothesis="Muon no faster than AdamW (ratio 1)",
        figure="param_muon_vs_adamw",
        full=True,
    )


_ASPECT_QUOTE = (
    "«Standard Pre-LN and most of its norm- and scaling-based variants provide little benefit and can even degrade "
    "performance as models become deeper and narrower, whereas HC and Full AttnRes improve consistently even at "
    "extreme deep shapes»"
)
_ASPECT_SCOPE = (
    "by construction: every shape of one non-embedding size (n_layers x d_model^2 fixed), one recipe for every shape "
    "and architecture (AdamW at one rate, warm-up, cosine), the same seeds (weights and data stream) paired across "
    "shapes"
)


def _aspect(name: str, statement: str, sign: int, hypothesis: str, quantity: str) -> ClaimSpec:
    return ClaimSpec(
        name=name,
        tests="paper",
        comparison="sign",
        paper=SEED_ASPECT,
        statement=f"{_ASPECT_QUOTE}: {statement}",
        scope=_ASPECT_SCOPE,
        quantity=quantity,
        source="seed 000#69 (DepthBench); probes/parameterisation/aspect_ratio.py",
        hypothesis=hypothesis,
        sign=sign,
        figure="param_aspect_ratio",
        full=True,
    )


_STEP = "per-seed held-out loss at the deepest shape minus at the next shallower one (nats)"


DECLARED = declare(
    "parameterisation",
    _width("softmax", "yang2022", "muP (Tensor Programs V) on the zoo's softmax transformer"),
    _width(
        "gated_delta",
        "003#17",
        "muP on Gated DeltaNet («propagating coordinate-size estimates through the "
        "forward pass, gating mechanisms, and recurrent state dynamics»), with mup's rules and ours for the gates",
    ),
    _init("softmax", "yang2022", "muP (Tensor Programs V) on the zoo's softmax transformer"),
    _init("gated_delta", "003#17", "muP on Gated DeltaNet"),
    ClaimSpec(
        name="depth_exponent_standard_stream_change",
        tests="derivation",
        comparison="bound",
        paper="yang2023",
        statement="our derivation for the standard parameterisation Depth-muP improves on: the final stream's change "
        "after one small update grows at least like L (the blocks' own updates add coherently; what later blocks add "
        "to a change reaching them only adds), so its exponent in L is >= 1",
        scope=_DEPTH_SCOPE,
        quantity="per-seed least-squares slope of ln RMS(stream change) on ln n_layers (the worst seed decides)",
        source=SOURCE,
        relation=">=",
        figure="param_depth",
        full=True,
    ),
    _depth("standard", "yang2023", "the standard parameterisation Depth-muP improves on (no branch scaling)"),
    _depth("depth_mup_sqrt", "yang2023", "Depth-muP (branches times 1/sqrt(L))"),
    _depth("depth_mup_complete", "dey2025", "CompleteP (branches times 1/L)"),
    ClaimSpec(
        name="newton_schulz_singular_value_map",
        tests="software",
        comparison="identity",
        statement="the iteration Muon runs, five quintic steps with «Newton-Schulz coefficients (3.4445, -4.7750, "
        "2.0315)», keeps the normalised input's singular vectors and maps each singular value by phi(s) = a s + b s^3 "
        "+ c s^5: our implementation against its closed form, float64",
        quantity="largest absolute difference of the output's singular values from phi^5 of the input's",
        source=MUON_SOURCE,
        figure="param_newton_schulz",
    ),
    *(spec for run in TRANSFER_RUNS for spec in _transfer(run)),
    ClaimSpec(
        name="muon_best_lr_inside_grid",
        tests="paper",
        comparison="scope",
        paper="004#16",
        statement="Muon against AdamW: each optimiser's tuned rate, at every width, is bracketed by its grid (a "
        "hypothesis of comparing the two at their best rates)",
        quantity="number of (optimiser, width) tunings whose best rate is the grid's first or last",
        source="probes/parameterisation/muon_vs_adamw.py: measure",
        relation="<=",
        figure="param_muon_vs_adamw",
        full=True,
    ),
    _muon("{width}"),
    _aspect(
        "aspect_pre_ln_deeper_narrower",
        "Pre-LN's held-out loss rises at the last step to the deepest, narrowest shape",
        +1,
        "depth pays for Pre-LN at a fixed size: the loss does not rise",
        _STEP,
    ),
    _aspect(
        "aspect_ln_scaling_deeper_narrower",
        "with LayerNorm Scaling the held-out loss rises at the last step to the deepest, narrowest shape",
        +1,
        "depth pays with LayerNorm Scaling at a fixed size: the loss does not rise",
        _STEP,
    ),
    _aspect(
        "aspect_attnres_deeper_narrower",
        "with Full AttnRes the held-out loss falls at the last step to the deepest, narrowest shape",
        -1,
        "depth does not pay with Full AttnRes either: the loss does not fall",
        _STEP,
    ),
    _aspect(
        "aspect_attnres_beats_pre_ln_deepest",
        "at the deepest, narrowest shape Full AttnRes's held-out loss is below Pre-LN's",
        -1,
        "the residual design does not matter at the deepest shape: equal losses",
        "per-seed held-out loss of Full AttnRes minus Pre-LN at the deepest shape (nats)",
    ),
    *(
        ClaimSpec(
            name=f"newton_schulz_band_{end}",
            tests="derivation",
            comparison="bound",
            paper="004#16",
            statement="our derivation for Muon's «Newton-Schulz coefficients (3.4445, -4.7750, 2.0315)»: phi maps "
            "[m, M] = [phi(s1), phi(s*)] = [0.6818, 1.2024] into itself, so after five steps every singular value "
            "whose "
            "normalised input is at least s_5 (the root of phi^5(s) = m) lies in it: the iteration approximates the "
            "polar factor to within -32% / +20%, not to 1",
            scope="by construction: i.i.d. Gaussian matrices in float64, the iteration's own Frobenius normalisation",
            quantity=f"{'smallest' if end == 'low' else 'largest'} output singular value over every input at least s_5",
            source=MUON_SOURCE,
            relation=">=" if end == "low" else "<=",
            figure="param_newton_schulz",
        )
        for end in ("low", "high")
    ),
)
