"""The declared claims of attention_entropy: the planted-key network against its closed forms and the softmax and SSMax
fading rates (000#6); the entropy bounds on every row (the range form and the spectral form after Zhai et al. 2023,
the dilution bound for 000#6); the entropy of Gaussian-logit rows at initialisation and past the breakdown of the
large-n law; sigmoid row totals at initialisation (000#17); logit growth and entropy collapse in training (Zhai et al.
2023, Wortsman et al. 2023); models with and without LayerNorm and GELU (004#30); trained retrieval at longer
contexts, softmax against SSMax (000#6); trained sigmoid attention against softmax (000#17). No claim of this probe
names a regime, so it declares no scope checks."""

from analysis.claims.specs import ClaimSpec, declare
from probes.attention_entropy.nonlin import COLLAPSED, NONLIN_SOURCE, OVERLOADED, UNIFORM_HYP
from probes.attention_entropy.retrieval import RETRIEVAL_SOURCE
from probes.attention_entropy.shared import FADE_WITHIN_RUN
from probes.attention_entropy.sigmoid import SIGMOID_SOURCE
from probes.attention_entropy.sigmoid_trained import SIGMOID_TRAINED_SOURCE

_Q_SSMAX = (
    "«The maximum element of the vector output by the Softmax function approaches zero as the input vector size "
    "increases»"
)
_Q_FLATTEN = "«causing the attention distribution to flatten as the context size grows»"
_Q_SIGMOID_NORMS = (
    "«stabilization of large initial attention norms during the early stages of training as a crucial factor»"
)
_Q_NONLIN = (
    "«{\\em entropy collapse} in deeper layers that destabilizes training, and {\\em entropic overload} in earlier "
    "layers»"
)

_PLANTED = (
    "by construction: the float64 planted-key network has exactly one logit g on key 0 and zero on the n - 1 others, "
    "the closed form's setting"
)
_MARGIN = "; the rate is claimed only at |s g - 1| >= fade_margin, where the finite-n correction is small"
_ROW_BOUND = (
    "by construction: the bound's only hypothesis is read off each row itself (its measured logit range or largest "
    "|logit|), so every softmax row of any model measured meets it"
)
_SPECTRAL = (
    "by construction where recorded: only pre-LN zoo models without QK-norm or RoPE, whose logit is c x_i^T W_q^T W_k "
    "x_j of the measured LayerNorm outputs; not checked: projection biases (bias=true) or the SSMax factor s ln n "
    "(attention=ssmax), which the bound leaves out"
)
_NONLIN_INIT = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which corpus text (repeated tokens share keys) "
    "and deeper layers need not give; the kurtosis excess is measured, not checked"
)
_NONLIN_TRAINED = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which trained weights need not give; the claim "
    "asks whether it still describes trained rows at their measured std"
)
_POOLED = "; the pooled form also assumes one logit std for every row of a layer, which the rows do not share"
_DILUTION_SOURCE = "derivation: |x_j| <= M gives max p <= e^M / (e^M + (n-1) e^{-M}) (<= e^{2M} / n)"
_WORTSMAN = "Wortsman et al. 2023, Small-scale proxies for large-scale Transformer training instabilities"
_NONLIN_STANDARD = "removing LayerNorm and GELU leaves these layers' entropy as in the standard (Pre-LN, GELU) model"

DECLARED = declare(
    "attention_entropy",
    # ---------------------------------------------------------------------------------- planted key and fading (000#6)
    ClaimSpec(
        name="planted_{kernel}_exact",
        tests="software",
        comparison="identity",
        statement="the float64 planted-key network's weight on key 0 in row n - 1 equals its closed form (softmax "
        "e^g/(e^g + n - 1), SSMax n^{sg}/(n^{sg} + n - 1), sigmoid sigma(g + b)) for n = 1..planted_max_n",
        quantity="largest |measured - closed-form| planted weight (dimensionless)",
        figure="ae_planted",
    ),
    ClaimSpec(
        name="ssmax_fade_rate_sg{sg}",
        tests="derivation",
        comparison="law",
        paper="000#6",
        statement="our derivation for SSMax (logits times s ln n): a planted key with gap g keeps weight "
        "1/(1 + (n-1) n^{-sg}), which fades like n^{min(sg-1, 0)}: the fading stops iff s g >= 1",
        scope=_PLANTED + _MARGIN,
        quantity="fitted d ln w / d ln n over the top half-decade below planted_max_n (dimensionless)",
        source="derivation: w = 1/(1 + (n-1) n^{-sg}) ~ n^{min(sg-1, 0)}; fading stops iff s g >= 1",
        figure="ae_ssmax_rate",
        within_run=FADE_WITHIN_RUN,
    ),
    ClaimSpec(
        name="softmax_fade_rate",
        tests="derivation",
        comparison="law",
        paper="000#6",
        statement="our derivation for " + _Q_SSMAX + ": a softmax key with a fixed logit gap g keeps weight "
        "e^g/(e^g + n - 1), whose log-log slope tends to -1 (correction e^g/n)",
        scope=_PLANTED,
        quantity="fitted d ln w / d ln n over the top half-decade below planted_max_n (dimensionless)",
        source="derivation: softmax planted weight e^g/(e^g + n - 1) ~ e^g / n",
        hypothesis="no dilution: a key with a fixed logit gap keeps its weight as n grows",
        figure="ae_ssmax_rate",
        within_run=FADE_WITHIN_RUN,
    ),
    # ------------------------------------------------------------------------------------------- row bounds
    ClaimSpec(
        name="range_bound_holds",
        tests="derivation",
        comparison="bound",
        paper="zhai2023",
        statement="our derivation (the step under Zhai et al.'s entropy bound): a softmax row whose logits span a "
        "range R has H >= -ln max p >= ln(1 + (n-1) e^{-R})",
        scope=_ROW_BOUND,
        quantity="smallest H - ln(1 + (n-1) e^{-R}) over every row (nats)",
        source="derivation: H >= -ln max p >= ln(1 + (n-1) e^{-R})",
        relation=">=",
    ),
    ClaimSpec(
        name="spectral_bound_holds",
        tests="derivation",
        comparison="bound",
        paper="zhai2023",
        statement="our Cauchy-Schwarz form of Zhai et al.'s bound: at initialisation every row has H >= ln(1 + (n-1) "
        "exp(-2 c ||W_q^T W_k||_2 |x_i| max_j |x_j|)), so a small spectral norm forbids entropy collapse",
        scope=_SPECTRAL,
        quantity="smallest H - spectral bound over every row of the measured model (nats)",
        source="Zhai et al. 2023 (Cauchy-Schwarz form derived in the theory module)",
        relation=">=",
    ),
    ClaimSpec(
        name="max_weight_bound_holds",
        tests="derivation",
        comparison="bound",
        paper="000#6",
        statement="our derivation for " + _Q_SSMAX + ": with every logit in [-M, M] the largest weight is at most "
        "e^M/(e^M + (n-1) e^{-M}) <= e^{2M}/n",
        scope=_ROW_BOUND,
        quantity="smallest e^M/(e^M + (n-1)e^{-M}) - max p over every row (dimensionless)",
        source=_DILUTION_SOURCE,
        relation=">=",
        figure="ae_entropy_vs_n",
    ),
    ClaimSpec(
        name="max_weight_bound_holds_sweep",
        tests="derivation",
        comparison="bound",
        paper="000#6",
        statement="our derivation for " + _Q_SSMAX + ": with every logit in [-M, M] the largest weight is at most "
        "e^M/(e^M + (n-1) e^{-M}), at every logit scale of the sweep",
        scope=_ROW_BOUND,
        quantity="smallest bound - max p over every row of every sweep model (dimensionless)",
        source=_DILUTION_SOURCE,
        relation=">=",
    ),
    # ---------------------------------------------------------------------------------------- Gaussian-logit entropy
    ClaimSpec(
        name="entropy_deficit_matches_gaussian",
        tests="derivation",
        comparison="prediction",
        paper="000#6",
        statement="our derivation for " + _Q_FLATTEN + ": n i.i.d. N(0, s^2) logits give E[ln n - H] by exact "
        "quadrature (s^2/2 while (e^{s^2}-1)/n << 1), a fixed deficit, so H / ln n -> 1 as n grows",
        scope="by construction in part: recorded only for own untrained causal models on distinct tokens without "
        "positions (not_evaluated otherwise), whose layer-0 logits are i.i.d. over keys; not checked: their Gaussian "
        "shape, and independence in deeper layers",
        quantity="(ln n - H) / (ln n - E_gauss[H]) at the largest n, mean over models, layers, heads (dimensionless)",
        source="derivation: i.i.d. N(0, s^2) logits (exact quadrature)",
        hypothesis="uniform attention: no entropy deficit (H = ln n)",
        figure="ae_entropy_vs_n",
    ),
    ClaimSpec(
        name="entropy_past_breakdown_matches_exact_gaussian",
        tests="derivation",
        comparison="prediction",
        paper="giorlandino2026",
        statement="our derivation for attention at initialisation as a random-energy model: past the breakdown s^2 = "
        "ln n the law ln n - s^2/2 fails and the exact Gaussian E[H] (O(1) past freezing s^2 = 2 ln n) holds",
        scope="by construction: layer 0 of own untrained models on distinct tokens without positions, whose logits "
        "are i.i.d. over a row's keys, and recorded only when every measured std passes s^2 > ln n; not checked: "
        "their Gaussian shape at this logit scale",
        quantity="mean layer-0 row entropy H at the largest logit scale, n = sweep_len (nats)",
        source="derivation: exact Gaussian quadrature at the measured std vs the LLN law ln n - s^2/2",
        hypothesis="the LLN law ln n - s^2/2 still holds past the breakdown, floored at H = 0 (all weight on the "
        "largest logit) past freezing",
        figure="ae_entropy_vs_scale",
    ),
    # ------------------------------------------------------------------------------------ sigmoid at init (000#17)
    ClaimSpec(
        name="sigmoid_row_total_{bias}",
        tests="derivation",
        comparison="prediction",
        paper="000#17",
        statement="our derivation for the paper's " + _Q_SIGMOID_NORMS + ": a sigmoid row of n N(0, s^2) logits "
        "carries total weight n E sigma(s Z + b): n/2 at b = 0, about 1 at b = -ln n",
        scope="by construction in part: own untrained sigmoid models on distinct tokens, the closed form at each "
        "row's measured logit std (the total is linear in the weights, so independence is not needed); not checked: "
        "that each logit is N(0, s^2) with mean zero",
        quantity="total sigmoid weight of a query row at initialisation, n = sweep_len (dimensionless)",
        source=SIGMOID_SOURCE,
        figure="ae_sigmoid_init",
    ),
    # ----------------------------------------------------------------------------------------------------- training
    ClaimSpec(
        name="spectral_bound_holds_trained",
        tests="derivation",
        comparison="bound",
        paper="zhai2023",
        statement="our Cauchy-Schwarz form of Zhai et al.'s bound on trained weights: every row has H >= ln(1 + (n-1) "
        "exp(-2 c ||W_q^T W_k||_2 |x_i| max_j |x_j|))",
        scope=_SPECTRAL,
        quantity="smallest H - spectral bound over rows of the probe batch and checkpoints without QK-norm (nats)",
        source="Zhai et al. 2023 (Cauchy-Schwarz form derived in the theory module), trained weights",
        relation=">=",
        figure="ae_training",
    ),
    ClaimSpec(
        name="qknorm_bounds_logits",
        tests="paper",
        comparison="sign",
        paper="wortsman2023",
        statement="Wortsman et al. 2023: at large learning rates attention logits grow without bound, and QK-layernorm "
        "mitigates this growth",
        scope="not checked: the paper's finding is for small-scale proxy models trained long at large learning rates; "
        "here tiny LMs at the sweep's highest lr for train_steps updates, and the run does not check that the plain "
        "model's logits diverge",
        quantity="ln(max |logit| over training without QK-norm / with QK-norm), per seed (dimensionless)",
        source=_WORTSMAN,
        hypothesis="QK-norm leaves the attention logits' growth unchanged (log ratio 0)",
        sign=1,
        figure="ae_training",
        full=True,
    ),
    ClaimSpec(
        name="qknorm_keeps_entropy_higher",
        tests="paper",
        comparison="sign",
        paper="wortsman2023",
        statement="Wortsman et al. 2023: attention logit growth collapses attention to near one-hot weights (entropy "
        "collapse, after Dehghani et al. 2023), and QK-layernorm prevents it",
        scope="not checked: the paper's finding is for small-scale proxy models trained long at large learning rates; "
        "here tiny LMs at the sweep's highest lr for train_steps updates, and the run does not check that the plain "
        "model collapses",
        quantity="final min head H / ln n with QK-norm - without, per seed (dimensionless)",
        source=_WORTSMAN,
        hypothesis="QK-norm does not change the smallest head entropy",
        sign=1,
        figure="ae_training",
        full=True,
    ),
    ClaimSpec(
        name="entropy_collapse_grows_with_lr",
        tests="paper",
        comparison="sign",
        paper="zhai2023",
        statement="Zhai et al. 2023: attention entropy collapse (pathologically low attention entropy) accompanies "
        "unstable training with aggressive hyper-parameters such as large learning rates",
        scope="not checked: the paper observes collapse in larger models trained to instability; here tiny LMs without "
        "QK-norm over train_steps updates, and the run does not check that the highest lr destabilises training",
        quantity="final min head H / ln n at the lowest lr - at the highest lr, per seed (dimensionless)",
        source="Zhai et al. 2023, Stabilizing transformer training by preventing attention entropy collapse",
        hypothesis="the learning rate does not change the smallest head entropy",
        sign=1,
        figure="ae_training",
        full=True,
    ),
    # ------------------------------------------------------------------------------- without nonlinearities (004#30)
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_rows_init_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, at initialisation: a layer's mean "
        "H / ln n is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits at each row's std",
        scope=_NONLIN_INIT,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_init_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, at initialisation: a layer's mean "
        "H / ln n is the mean over n of E[H](n, s_l) / ln n for i.i.d. N(0, s_l^2) logits at the layer's pooled std",
        scope=_NONLIN_INIT + _POOLED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_rows_trained_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, trained: a layer's mean H / ln n "
        "is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits at each row's std",
        scope=_NONLIN_TRAINED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_trained_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, trained: a layer's mean H / ln n "
        "is the mean over n of E[H](n, s_l) / ln n for i.i.d. N(0, s_l^2) logits at the layer's pooled std",
        scope=_NONLIN_TRAINED + _POOLED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_rows_init",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), at initialisation: the mean H / ln n "
        "over all layers is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits",
        scope=_NONLIN_INIT,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_init",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), at initialisation: the mean H / ln n "
        "over all layers is the mean over n of E[H](n, s_l) / ln n at each layer's pooled logit std",
        scope=_NONLIN_INIT + _POOLED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_rows_trained",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), trained: the mean H / ln n over all "
        "layers is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits",
        scope=_NONLIN_TRAINED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_trained",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), trained: the mean H / ln n over all "
        "layers is the mean over n of E[H](n, s_l) / ln n at each layer's pooled logit std",
        scope=_NONLIN_TRAINED + _POOLED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_logit_std_grows_with_depth_{state}",
        tests="derivation",
        comparison="sign",
        paper="004#30",
        statement="our mechanism for " + _Q_NONLIN + ": without LayerNorm each block adds linear maps of the residual "
        "stream to it, so its norm and the logit std grow with depth faster than under Pre-LN",
        scope="by construction at initialisation: both variants share seeds, width and depth and differ only in "
        "LayerNorm and activation; not checked after training: that training keeps the residual growth the "
        "derivation describes at initialisation",
        quantity="ln(s_last / s_first) without nonlinearities - with them, per seed (dimensionless)",
        source="derivation: without LayerNorm each block adds linear maps of the residual stream to it, so its norm, "
        "and the logit std ~ |x|^2, grow with depth; Pre-LN normalises every attention input",
        hypothesis="removing LayerNorm and GELU does not change how the logit std changes with depth",
        sign=1,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_deep_layers_collapse",
        tests="paper",
        comparison="prediction",
        paper="004#30",
        statement="removing nonlinearities triggers " + _Q_NONLIN + "; here the deep third of the layers, with "
        "issue 17's threshold H / ln n < 0.2 for collapse",
        scope="not checked: the paper reports these failure modes in decoder-only language models pre-trained as "
        "LLMs; here 6 narrow layers trained briefly on short text, and the 0.2 threshold is ours, not the paper's",
        quantity="mean H / ln n of the trained deep layers without LayerNorm or GELU (dimensionless)",
        source=f"issue 17 on 004#30: < {COLLAPSED} (entropy collapse)",
        hypothesis=_NONLIN_STANDARD,
        figure="ae_nonlin",
        full=True,
    ),
    ClaimSpec(
        name="no_nonlin_early_layers_overload",
        tests="paper",
        comparison="prediction",
        paper="004#30",
        statement="removing nonlinearities triggers " + _Q_NONLIN + "; here the early third of the layers, with "
        "issue 17's threshold H / ln n > 0.9 for overload",
        scope="not checked: the paper reports these failure modes in decoder-only language models pre-trained as "
        "LLMs; here 6 narrow layers trained briefly on short text, and the 0.9 threshold is ours, not the paper's",
        quantity="mean H / ln n of the trained early layers without LayerNorm or GELU (dimensionless)",
        source=f"issue 17 on 004#30: > {OVERLOADED} (entropic overload)",
        hypothesis=_NONLIN_STANDARD,
        figure="ae_nonlin",
        full=True,
    ),
    # ---------------------------------------------------------------------------------- trained retrieval (000#6)
    ClaimSpec(
        name="ssmax_trained_{kernel}_slope",
        tests="derivation",
        comparison="law",
        paper="000#6",
        statement="our derivation for trained planted-key retrieval: the query row's planted weight is 1/(1 + "
        "sum_fixed e^{-a d_f} + m mean_j e^{-a d_j}) (a = 1 softmax, s ln K SSMax), so the gaps measured at the "
        "training length predict its log-log slope at longer contexts",
        scope="by construction: one layer, one head, no positions, so a distractor's logit depends only on the query "
        "and its own pair, and the task draws distractors i.i.d. at every length, as the prediction assumes",
        quantity="fitted d ln w / d ln n of the mean planted weight over the test lengths (dimensionless)",
        source=RETRIEVAL_SOURCE,
        figure="ae_ssmax_trained",
        full=True,
    ),
    ClaimSpec(
        name="ssmax_trained_retrieval_{factor}x",
        tests="paper",
        comparison="sign",
        paper="000#6",
        statement="models using SSMax «significantly improve performance in long contexts and key information "
        "retrieval»: at the longest test length SSMax retrieves better than softmax",
        scope="not checked: the paper's finding is for pretrained language models at long contexts; here a one-layer, "
        "one-head attention-only model on synthetic retrieval, s chosen so both kernels coincide at the training "
        "length",
        quantity="retrieval accuracy SSMax - softmax at the longest test length, per seed (dimensionless)",
        source="000#6: SSMax generalises to longer contexts and retrieves better there than softmax",
        hypothesis="the kernel does not change retrieval at the longest length (accuracy difference 0)",
        sign=1,
        figure="ae_ssmax_trained",
        full=True,
    ),
    # ---------------------------------------------------------------------------------- trained sigmoid (000#17)
    ClaimSpec(
        name="sigmoid_trained_loss_ratio",
        tests="paper",
        comparison="prediction",
        paper="000#17",
        statement="«properly normalized sigmoid attention matches the strong performance of softmax attention on a "
        "wide range of domains and scales»: with b = -ln n its final loss equals softmax's (ratio 1)",
        scope="not checked: the paper's finding is for language, vision and speech models at scale; here tiny LMs "
        "trained train_steps updates on short text with b = -ln train_seq_len",
        quantity="final training loss sigmoid (b = -ln T) / softmax, per seed (dimensionless)",
        source=SIGMOID_TRAINED_SOURCE,
        hypothesis="the bias does not matter: the loss ratio of the b = 0 sigmoid model",
        figure="ae_sigmoid_trained",
        full=True,
    ),
    ClaimSpec(
        name="sigmoid_trained_bias_lowers_loss",
        tests="paper",
        comparison="sign",
        paper="000#17",
        statement="the paper identifies " + _Q_SIGMOID_NORMS + " of sigmoid attention; the bias b = -ln n lowers the "
        "trained loss against b = 0",
        scope="not checked: the paper's finding is for models at scale; here tiny LMs trained train_steps updates on "
        "short text with b = -ln train_seq_len",
        quantity="ln(final loss at b = 0 / at b = -ln T), per seed (dimensionless)",
        source="000#17: stabilising the large initial attention norms (b = -ln n) is crucial for training sigmoid "
        "attention",
        hypothesis="the bias does not change the trained loss (log ratio 0)",
        sign=1,
        figure="ae_sigmoid_trained",
        full=True,
    ),
)
