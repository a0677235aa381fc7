"""The papers the workbench checks: one registry, keyed as the claims' ``paper`` field is.

A seed paper's key is its place in ``../shared/SEED_CATALOGUE.md`` (``000#26``: file ``000_...`` of
``../shared/seeds/``, abstract 26; a duplicated abstract keeps its first key, the others are ``aliases``). A paper
outside the seeds has a key of its first author's name and year (``dong2021``). Every claim but a software identity
names one of these keys (:mod:`analysis.claims.specs`); the per-paper scorecard (``figures/papers.json``,
``python -m probes claims --paper KEY``) groups the claims by it. ``REFERENCES.md`` lists the same papers for readers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEED_KEY = re.compile(r"^[0-9]{3}#[0-9]+$")
OTHER_KEY = re.compile(r"^[a-z]+[0-9]{4}$")


@dataclass(frozen=True)
class Paper:
    """A paper: its ``key``, what it says that the workbench checks (``summary``), and its other seed keys."""

    key: str
    summary: str
    aliases: tuple[str, ...] = ()
    name: str = ""  # a short name for tables where the summary does not open with one

    @property
    def seed(self) -> bool:
        """True for a paper of the seed catalogue."""
        return bool(SEED_KEY.match(self.key))

    @property
    def short(self) -> str:
        """The paper's name as a table shows it: ``name``, else the summary up to its first colon."""
        return self.name or self.summary.split(": ", 1)[0]


_PAPERS = (
    Paper(
        "000#1",
        'The prompt-forgetting ("no-hair") paper: two prompts followed by the same continuation; the offset decays as t^-α (trained LMs α ≈ 0.55–0.7, untrained 0.2–0.5); bound O(P (ln t)^(L−1)/t) for Pre-LN softmax transformers with bounded logits and pre-norm activations away from zero; exactly solvable relay model; a dilution-cancelling logit bias stops the decay early in training and reverses it after',
        aliases=(),
    ),
    Paper(
        "000#2",
        "GPAS: Pre-LN activation variance grows with depth, the residual path swamping sub-layer outputs",
        aliases=(),
    ),
    Paper(
        "000#4",
        "Xiong et al. 2020: mean-field analysis at initialisation; Post-LN has large expected gradients near the output (needs warm-up), Pre-LN does not",
        aliases=(),
    ),
    Paper(
        "000#6",
        "SSMax (scalable softmax): the largest softmax weight goes to 0 as the context grows, flattening attention; SSMax counteracts it",
        aliases=(),
    ),
    Paper("000#11", "Peri-LN: normalising around and after sub-layers balances variance growth", aliases=()),
    Paper("000#12", "BHyT: under Pre-LN the hidden-state magnitude and variance escalate with depth", aliases=()),
    Paper(
        "000#17",
        "Sigmoid attention (Ramapuram et al. 2024): sigmoid rows are not normalised, and stabilising the large initial attention norms (a bias b = −ln n) is what makes training work",
        aliases=("004#109",),
    ),
    Paper(
        "000#26",
        "Mahankali et al. 2023: one layer of linear self-attention trained on linear regression implements one step of GD (isotropic Gaussian inputs) or of preconditioned GD (anisotropic); with only the responses made nonlinear it still implements one step of GD on least squares",
        aliases=("003#108",),
    ),
    Paper(
        "000#33",
        "In-context logistic regression by softmax transformers: each layer one step of normalised GD; a single layer trained on one GD step and looped gives the multi-step construction",
        aliases=(),
    ),
    Paper(
        "000#45",
        "A looped linear transformer with LayerNorm, trained on principal-component prediction, converges to the power method, each self-attention layer performing one power iteration; without LayerNorm it cannot exactly learn the power method",
        aliases=("003#35",),
        name="Looped linear transformers learn the power method",
    ),
    Paper(
        "000#50",
        "Curse of Depth: Pre-LN variance grows with depth so deep blocks approach the identity; LayerNorm scaling 1/√depth fixes it",
        aliases=(),
    ),
    Paper(
        "000#62",
        "Mix-LN: Pre-LN shrinks deep layers' gradients, Post-LN early ones; Post-LN early and Pre-LN deep",
        aliases=(),
    ),
    Paper(
        "000#65",
        "DeepNet (DeepNorm): a modified residual and a derived initialisation bound the model update independently of depth",
        aliases=(),
    ),
    Paper("000#94", "NormFormer: under Pre-LN, early layers' gradients are much larger than late layers'", aliases=()),
    Paper(
        "000#66",
        "The delta rule for linear transformers (DeltaNet): an additive outer-product memory interferes ((N−1)/d_k read-out error with random keys); the delta rule overwrites a key's value and helps associative recall",
        aliases=("003#30",),
    ),
    Paper(
        "003#64",
        'Katharopoulos et al. 2020, "Transformers are RNNs": linear attention with a kernel feature map, O(N²) to O(N), computed as a recurrent network',
        aliases=(),
    ),
    Paper(
        "003#8",
        "Gated DeltaNet: gating gives rapid memory erasure, the delta rule targeted updates; recall accuracy ordering of the mixers",
        aliases=(),
    ),
    Paper(
        "003#14",
        'Zucchet et al., "Gated recurrent neural networks discover attention": linear recurrent layers with multiplicative gating can exactly implement (linear) self-attention, and gradient descent finds the construction on in-context learning tasks',
        aliases=(),
    ),
    Paper(
        "003#16",
        "Gu and Dao, Mamba: letting the SSM parameters depend on the input lets the model «selectively propagate or forget information» depending on the current token (content-based reasoning, selective copying)",
        aliases=(),
    ),
    Paper(
        "003#112",
        "Momentum DeltaNet: linear attention as online SGD with a momentum (heavy-ball) update; the momentum recurrence is a second-order system whose complex-conjugate eigenvalues guide stable gating",
        aliases=(),
    ),
    Paper(
        "003#2",
        "Gated linear attention (GLA): RetNet and TransNormerLLM found that a global decay term in the additive RNN update greatly improves linear attention; data-dependent gating improves it further; a hardware-efficient parallel form",
        aliases=(),
    ),
    Paper(
        "003#50",
        'Chen et al., "Bypassing the exponential dependency: looped transformers efficiently learn in-context by multi-step gradient descent": a linear looped transformer implements multi-step GD in context, small error at n = O(d) examples for well-conditioned data (not n = exp(Ω(T)))',
        aliases=(),
    ),
    Paper(
        "004#70",
        "Performer (FAVOR+): positive random features give an unbiased estimate of the softmax kernel with variance e^{2q·k}(e^{‖q+k‖²}−1)/m",
        aliases=(),
    ),
    Paper(
        "000#39",
        "Softmax attention over i.i.d. Gaussian tokens converges, as the prompt grows, to a linear operator on the token measure (non-asymptotic concentration bounds)",
        aliases=(),
        name="Softmax attention as a linear operator on the token measure",
    ),
    Paper(
        "000#16",
        "K-interval attention: an approximate softmax whose exponential is read off K + 1 grid values per row (calibrated per row; interpolation or hard rounding)",
        aliases=(),
    ),
    Paper(
        "000#29",
        "Sparse (α-entmax) attention: softmax's dense weights let non-informative tokens accumulate mass as the sequence grows (dispersion); entmax assigns exact zeros to irrelevant tokens",
        aliases=(),
    ),
    Paper(
        "000#40",
        'Shen et al. 2023, "A Study on ReLU and Softmax in Transformer": the FFN is a key-value memory; ReLU and softmax normalise differently, so their outputs\' variances differ and ReLU handles many value slots; softmax with a LayerNorm after it matches ReLU',
        aliases=(),
    ),
    Paper(
        "000#115",
        "Trockman & Kolter 2023, mimetic initialisation: setting W_q W_k^T near the identity (and W_v W_o near minus the identity), as in pre-trained attention, lets vanilla transformers train faster on small data",
        aliases=(),
    ),
    Paper(
        "000#118",
        "Normalized attention without probability cage: softmax weights confine the output to the convex hull of the values, Transformers are biased towards token isolation at initialisation in a sequence-length-dependent way, sum pooling and normalisation instead of softmax avoid it",
        aliases=(),
    ),
    Paper(
        "003#31",
        'TransNormer, "The devil in linear transformer": the scaling (denominator) of kernel-based linear attention makes its gradients unbounded; replacing it by a normalisation of the output (NormAttention) stabilises them',
        aliases=(),
    ),
    Paper(
        "000#85",
        "Softmax split into a nonlinear transformation and the l1 norm, the l1 norm being what keeps performance; softplus with l1 normalisation (and a length-dependent scale) generalises across inference lengths with numerical stability",
        aliases=(),
        name="Softplus with l1 normalisation (softmax split)",
    ),
    Paper(
        "004#82",
        'He & Hofmann, "Simplifying transformer blocks": signal propagation and shaped attention (alpha I + beta softmax - gamma C) let skip connections, value and projection parameters, sequential sub-blocks and norms be removed without loss of training speed',
        aliases=(),
    ),
    Paper(
        "004#28",
        'Cog attention ("More expressive attention with negative weights"): SignExp weights sign(z) e^abs(z) / sum e^abs(z) let a head delete, copy or keep tokens, and negative weights make a model more robust against representational collapse (earlier tokens over-squashed into later positions)',
        aliases=(),
    ),
    Paper(
        "004#5",
        "Length generalisation failures of self-attention: (1) the inability to fully remove irrelevant information, (2) learned positional biases up-weighting irrelevant keys at out-of-distribution distances; selective sparsity and contextualised relative distance mitigate them",
        aliases=(),
    ),
    Paper(
        "004#90",
        '"Augmenting self-attention with persistent memory": an all-attention layer whose queries also attend to learned persistent key-value vectors, which can replace the feed-forward layer without loss',
        aliases=(),
    ),
    Paper(
        "000#96",
        '"Three things everyone should know about vision transformers": (1) a block\'s residual layers can to some extent be processed in parallel without noticeably affecting accuracy; (2) fine-tuning attention only; (3) MLP patch pre-processing for masked self-supervision',
        aliases=(),
    ),
    Paper(
        "000#23",
        "SA-Softmax: softmax's gradient vanishes when attention scores are extreme; x * softmax(x) (and a normalised variant) keeps it",
        aliases=(),
    ),
    Paper(
        "003#74",
        "Linear Log-Normal attention: the distribution and concentration of attention weights; softmax's weights are log-normal and concentrated (entropy below ln n), kernelised linear attention's are not, and an exponential (log-normal) feature map restores it",
        aliases=(),
    ),
    Paper(
        "000#51",
        'Hedgehog: linear attentions lack softmax\'s low-entropy ("spiky") weights and dot-product monotonicity; simple feature maps that keep both (e.g. exponential or Taylor) match softmax but cost more, and Hedgehog learns them',
        aliases=(),
    ),
    Paper(
        "003#37",
        '"Your transformer is secretly linear": the map between consecutive decoder layers\' embeddings is nearly linear (Procrustes / linearity score about 0.99), and less so without the residual component, whose sublayer output norm is small',
        aliases=(),
    ),
    Paper(
        "003#57",
        "Bilinear MLPs (a GLU without its gate's nonlinearity) are a third-order tensor; eigendecomposition of their interaction matrices reveals interpretable low-rank structure, read from the weights alone",
        aliases=(),
        name="Bilinear MLPs as third-order tensors",
    ),
    Paper(
        "004#81",
        'Barbero et al. 2024, "Transformers need glasses!": distinct sequences\' last-token representations can become arbitrarily close (representational collapse), worse in low precision; over-squashing of early tokens',
        aliases=(),
    ),
    Paper(
        "004#1",
        "Simple Attention Networks: attention-only decoders against standard transformers matched for parameters, FLOPs and depth; deleting FFNs in place costs 0.47 nats, reallocating their parameters to attention depth leaves 0.006 nats (0.02-0.05 predicted on knowledge-dense text); routing (Q/K) matrices crystallise early, content matrices accumulate rank slowly and without FFNs in the attention output projection; QK-normalisation, not FFNs or residual gating, keeps 48-layer attention-only stacks trainable",
        aliases=(),
    ),
    Paper(
        "004#89",
        'Li et al., "Can Vision Transformers Perform Convolution?": one layer of multi-head attention with relative positional encoding performs any convolution constructively, with a lower bound on the number of heads',
        aliases=(),
    ),
    Paper(
        "004#24",
        'Xu et al., "KV Shifting Attention Enhances Language Modeling": induction heads need two layers of vanilla attention; KV shifting lowers the depth and width they need',
        aliases=(),
    ),
    Paper(
        "004#30",
        "Removing nonlinearities (LayerNorm, GELU) causes entropy collapse in deeper layers, which destabilises training, and entropic overload in earlier layers",
        aliases=(),
        name="Removing nonlinearities: entropy collapse and overload",
    ),
    Paper(
        "004#72",
        'Amsel, Yehudai and Bruna, "On the Benefits of Rank in Attention Layers": a nearest-neighbour target one full-rank head represents for any context length, but low-rank heads approximate only with a number of heads exponential in d; for short contexts depth lets low-rank attention approximate it',
        aliases=(),
    ),
    Paper(
        "003#17",
        "muP for Gated DeltaNet: propagating coordinate sizes through the forward pass, the gates and the recurrent state gives scaling rules under which the learning rate transfers across widths under AdamW and SGD, where the standard parameterisation does not",
        name="muP for Gated DeltaNet",
    ),
    Paper(
        "004#16",
        "Muon against AdamW: Muon orthogonalises its updates by a quintic Newton-Schulz iteration with coefficients (3.4445, -4.7750, 2.0315) and reaches the target loss with 48-52% of AdamW's training compute",
        name="Muon against AdamW",
    ),
    Paper(
        "000#69",
        "DepthBench: varying the width-depth aspect ratio d_model/n_layers at a fixed size, Pre-LN and its norm and scaling variants gain little or lose as models become deeper and narrower, while residual redesigns (Hyper-Connections, Full Attention Residuals) keep improving",
        name="DepthBench: the width-depth aspect ratio",
    ),
    # papers outside the seed catalogue
    Paper(
        "dong2021",
        "Dong et al. 2021, Attention is not all you need: pure attention loses rank doubly exponentially with depth; skip connections prevent it, MLPs slow it",
    ),
    Paper(
        "noci2022",
        "Noci et al. 2022, Signal propagation in transformers: rank collapse at initialisation; scaling the residual branches by 1/sqrt(L) keeps the rank at depth",
    ),
    Paper(
        "vonoswald2023",
        "von Oswald et al. 2023, Transformers learn in-context by gradient descent: a linear self-attention layer implements one GD step; trained deep stacks implement GD++",
    ),
    Paper(
        "garg2022",
        "Garg et al. 2022, What can transformers learn in-context? Trained transformers match least squares on in-context linear regression and beat averaging and nearest neighbours",
        name="Garg et al. 2022, What can transformers learn in-context?",
    ),
    Paper(
        "ahn2023",
        "Ahn et al. 2023, Transformers learn to implement preconditioned gradient descent: the optimum of one linear attention layer is one preconditioned GD step",
    ),
    Paper(
        "wortsman2023",
        "Wortsman et al. 2023, Small-scale proxies for large-scale Transformer training instabilities: attention logit growth and output-logit divergence, mitigated by QK-layernorm and z-loss",
    ),
    Paper(
        "zhai2023",
        "Zhai et al. 2023, Stabilizing transformer training by preventing attention entropy collapse: attention entropy is bounded below in terms of the spectral norm of W_q W_k^T",
    ),
    Paper(
        "yang2022",
        "Yang et al. 2022, Tensor Programs V (muP, muTransfer): with per-layer initialisation, learning-rate and output multipliers (attention 1/d_head), every layer's activations and updates stay O(1) as the width grows, so hyperparameters tuned small transfer to wide models",
        name="Yang et al. 2022, Tensor Programs V (muP)",
    ),
    Paper(
        "yang2023",
        "Yang et al. 2023, Tensor Programs VI (Depth-muP): residual branches times 1/sqrt(L) with matching learning rates keep feature learning and the update's effect O(1) as the depth grows",
        name="Yang et al. 2023, Depth-muP",
    ),
    Paper(
        "dey2025",
        "Dey et al. 2025, CompleteP: residual branches times 1/L (alpha = 1) with depth-independent Adam learning rates transfer hyperparameters across depth and keep every layer learning",
        name="Dey et al. 2025, CompleteP",
    ),
    Paper(
        "giorlandino2026",
        "Giorlandino & Goldt 2026, Two failure modes of deep transformers: rank collapse and entropy collapse as phases of attention at initialisation",
    ),
)

PAPERS: dict[str, Paper] = {p.key: p for p in _PAPERS}
ALIASES: dict[str, str] = {a: p.key for p in _PAPERS for a in p.aliases}


USER_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
USER_PAPERS: dict[str, Paper] = {}  # papers a user registered in this process (:func:`register_paper`)


def register_paper(key: str, summary: str, name: str = "") -> Paper:
    """Register a paper of your own claims (:mod:`analysis.claims.own`): ``key`` lower-case letters, digits and ``_``
    (``"mine"``, ``"smith2025"``), ``summary`` what it says that you check (``"My derivation: ..."``). Registering
    the same key again with the same text is a no-op (a notebook run twice); a key of the workbench's registry, or
    one registered with other text, is refused (``ValueError`` naming it)."""
    if not isinstance(key, str) or not USER_KEY.match(key):
        raise ValueError(f"key must be lower-case letters, digits and _ (at most 40, a letter first), got {key!r}")
    for field, value in (("summary", summary), ("name", name)):
        if not isinstance(value, str):
            raise ValueError(f"{field} must be a string, got {value!r}")
    if not summary.strip():
        raise ValueError(f"summary of paper {key!r} must say what it states that you check")
    new = Paper(key, summary.strip(), name=name.strip())
    if key in ALIASES or (key in PAPERS and key not in USER_PAPERS):
        raise ValueError(f"key {key!r} is a paper of the workbench's registry; choose another key for yours")
    if key in USER_PAPERS and USER_PAPERS[key] != new:
        raise ValueError(f"paper {key!r} is already registered with another summary or name: {USER_PAPERS[key]}")
    USER_PAPERS[key] = PAPERS[key] = new
    return new


def paper(key: str) -> Paper:
    """The paper of ``key`` (an alias resolves to its first key); ``ValueError`` naming the known keys."""
    key = ALIASES.get(key, key)
    if key not in PAPERS:
        raise ValueError(
            f"paper must be a key of analysis.claims.papers.PAPERS, got {key!r}; known: {', '.join(PAPERS)}"
        )
    return PAPERS[key]
