"""The declared claims of prompt_forgetting: the seed paper 000#1 (the "no-hair" prompt-forgetting paper) read on tiny
networks. Exact identities of our relay-network and bias code; our dilution bound and relay asymptotics; the
theorem's two hypotheses measured in each run (scope checks); its O(P (ln t)^(L-1)/t) bound; the paper's solvable
relay model as the toy model of untrained networks' exponent (one run, across depth); and the paper's own findings:
its measured alpha ranges, trained models forgetting faster, and the dilution-cancelling bias stopping the decay
early in training and reversing it after."""

from analysis.claims.specs import ClaimSpec, declare
from probes.prompt_forgetting.alpha_claims import BIAS_SOURCE, ONE_MODEL, RELAY_SOURCE
from probes.prompt_forgetting.claims import CONDITIONS_SOURCE
from probes.prompt_forgetting.config import SEED_SOURCE

_Q_RANGES = "«Trained models forget fast (αapprox0.55--0.7), untrained ones slowly (αapprox0.2--0.5)»"
_Q_RELAY = (
    "«An exactly solvable linear relay model shows that the bound cannot be improved and reproduces the rise of the "
    "local exponent towards 1 seen in untrained networks»"
)
_Q_BIAS = (
    "«Cancelling the dilution with a logit bias stops the decay early in training and reverses it after, so "
    "dilution is necessary for the forgetting we measure; untrained networks and the solvable model show it is also "
    "sufficient»"
)
_ALPHA = "last-layer decay exponent alpha of D(t) = |h^A(t) - h^B(t)|, least-squares over the fit window (1)"
_AT_SCALE = (
    "not met: the paper measures large language models (many layers, wide, long contexts); the run is a tiny "
    "pre-LN softmax network (L <= 12, d = 64, T = 4096), so the range is placed against it, not implied by it"
)
_BIAS_SCOPE = (
    "not checked: the paper's models are large LMs and it gives no form for the bias; the run adds our choice "
    "ln(t - P) to the prompt keys' logits of every continuation query in every layer of a tiny pre-LN softmax "
    "network (one weight seed when trained)"
)
_RELAY_ACROSS = (
    "not checked: the relay model linearises near-uniform attention (max |logit| < ln(T/P)/2, the runs' "
    "condition_dilution_regime), which this cross-run ledger does not record; untrained pre-LN softmax runs "
    "differing only in depth (and seed) by construction"
)
_STOPS_ONLY = "the bias only stops the decay (alpha = 0), it does not reverse it"
_RELAY_DEPTH_SOURCE = (
    "seed's linear relay model: each layer adds a factor ln t (relay_alpha_window over the same window)"
)

DECLARED = declare(
    "prompt_forgetting",
    # ---- software identities: the uniform relay network, the cancelling bias, the relay closed form
    ClaimSpec(
        name="uniform_equals_matrix_relay",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="a network with uniform attention, no norm and no MLP is the matrix relay model "
        "h^l = h^(l-1) + M h^(l-1) (W_o W_v)^T: its offsets equal the relay recursion's for every pair, layer and t",
        quantity="max |D - D_relay| / max |h| over pairs, layers, t (relative, float rounding)",
        source="derivation: uniform attention, no norm, no MLP = matrix relay model (theory module)",
        figure="pf_distance",
    ),
    ClaimSpec(
        name="uniform_layer1_bound_ratio_is_limit",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="one uniform layer gives D_1(t) = |A_1 sum_s delta_s| / t exactly, so t D_1(t) / P equals its "
        "limit |A_1 sum_s delta_s| / P at every t > P",
        quantity="max |bound_ratio / relay_matrix_limit - 1| over t at layer 1 (relative)",
        source="derivation: one uniform layer gives D(t) = |A_1 sum_s delta_s| / t exactly",
        figure="pf_bound_constant",
    ),
    ClaimSpec(
        name="uniform_one_layer_alpha_is_1",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="one uniform layer gives D(t) = |A sum_s delta_s| / t exactly, so the fitted exponent alpha is 1",
        quantity="fitted alpha of the single uniform layer (1)",
        source="derivation: one uniform layer gives D(t) = |A sum_s delta_s| / t exactly",
    ),
    ClaimSpec(
        name="cancel_bias_share_constant",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="uniform attention with the bias ln(t - P) on the prompt keys keeps the prompt's share of every "
        "continuation row at P/(P+1)",
        quantity="max |prompt share - P/(P+1)| over layers and t (attention weight)",
        source="derivation: b_t = ln(t - P) keeps a uniform row's prompt share at P/(P+1)",
        figure="pf_bias_training",
    ),
    ClaimSpec(
        name="uniform_bias_offset_constant",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="the uniform/no-norm/no-MLP relay network with the cancelling bias ln(t - P) has a t-independent "
        "offset: D(t) = D(P+1) at every t, layer and pair (the solvable model with dilution cancelled)",
        quantity="max |D(t) / D(P+1) - 1| over pairs, layers, t (relative)",
        source="derivation: the relay network with the cancelling bias has a t-independent offset",
        figure="pf_bias_training",
    ),
    ClaimSpec(
        name="relay_closed_form_exact",
        tests="software",
        comparison="identity",
        paper="000#1",
        statement="the scalar relay model's closed form in harmonic numbers equals its recursion exactly (rationals) "
        "for P in {1, 3}, L <= 3, t <= 20",
        quantity="number of mismatching (P, L, t) (count)",
        source="derivation (theory module docstring)",
    ),
    # ---- our derivations for the paper's setting
    ClaimSpec(
        name="relay_asymptotic_rate",
        tests="derivation",
        comparison="bound",
        paper="000#1",
        statement="our asymptotic expansion of the relay offsets, Delta^L_t = (P/t) Q_L(ln t) (1 + O(1/t)), errs "
        "relatively by at most L (L + P)/t (each of <= L harmonic factors by <= (L + P)/t)",
        scope="by construction: arithmetic on the scalar relay model itself (no network), L <= 4 and t on a "
        "log grid from P + 1 to the run's t_max",
        quantity="max over L <= 4 and t of |Delta / asymptotic - 1| t / (L (L + P)) (1)",
        source="derivation: neglected H_t - ln t - gamma = O(1/t)",
        figure="pf_relay_ratio",
    ),
    ClaimSpec(
        name="prompt_share_dilution_bound",
        tests="derivation",
        comparison="bound",
        paper="000#1",
        statement="our dilution bound behind «α=1 is the rate at which a fixed prompt's share of uniform attention "
        "shrinks»: softmax logits with |logit| <= B give the prompt a share <= P e^(2B) / (P e^(2B) + t - P)",
        scope="by construction: recorded only for softmax attention without the bias (a passed-in model's kernel "
        "as declared), with B the max |logit| measured on the same forward passes, the inequality's one hypothesis",
        quantity="max over t, heads, pairs of prompt share / its dilution bound (1)",
        source="derivation: |logit| <= B gives prompt share <= P e^2B / (P e^2B + t - P)",
    ),
    # ---- scope checks: the theorem's hypotheses, measured in the same run
    ClaimSpec(
        name="condition_dilution_regime",
        tests="derivation",
        comparison="scope",
        paper="000#1",
        statement="the theorem holds for «finite-depth pre-LN softmax transformers with bounded attention logits»; "
        "our dilution bound reaches below 1/2 inside the window, where its 1/t dilution acts, iff the max |logit| "
        "B < ln((T - P)/P)/2",
        quantity="max |attention logit| B over layers, heads, rows, pairs (logit units, bias removed)",
        source=CONDITIONS_SOURCE,
        relation="<",
    ),
    ClaimSpec(
        name="condition_prenorm_rms",
        tests="paper",
        comparison="scope",
        paper="000#1",
        statement="the bound needs «the pre-norm activations stay away from zero»: read as the smallest RMS of a "
        "pre-norm input above sqrt(norm eps), so the norm's gain is set by the activations",
        quantity="smallest RMS of a pre-norm input (ln1/ln2 hook_in) over positions, layers, pairs",
        source=CONDITIONS_SOURCE,
        relation=">",
    ),
    # ---- the paper's theorem
    ClaimSpec(
        name="bound_ratio_not_growing",
        tests="paper",
        comparison="bound",
        paper="000#1",
        statement="the offset is «Obig(P(log t)^{L-1}/tbig) for a prompt of length P and depth L» in «finite-depth "
        "pre-LN softmax transformers with bounded attention logits»: over a finite window D t / (P (ln t)^(l-1)) may "
        "grow no faster than the bound's extremal case, the seed's relay model, over the same window",
        scope=("condition_dilution_regime", "condition_prenorm_rms"),
        quantity="growth factor 2^slope of D t / (P (ln t)^(l-1)) over the last octave, slope CI lower end, against "
        "the relay model's over the same octave (at least 1), layer furthest above it (1)",
        source="seed theorem: D = O(P (ln t)^(L-1)/t) for pre-LN softmax with bounded logits; its extremal case, "
        "the seed's relay model, over the same window",
        figure="pf_bound_constant",
    ),
    # ---- the paper's solvable relay model as the toy model of untrained networks
    ClaimSpec(
        name="alpha_matches_relay",
        tests="toy_model",
        comparison="law",
        paper="000#1",
        statement=_Q_RELAY + ": an untrained pre-LN softmax network's alpha equals the relay model's alpha of its "
        "depth over the same window",
        scope=("condition_dilution_regime",),
        quantity=_ALPHA + ", against the relay model's over the same window",
        source=RELAY_SOURCE,
        hypothesis="pure dilution without relay: D ~ 1/t (alpha = 1, one layer or no mixing)",
        figure="pf_alpha_summary",
        within_run=ONE_MODEL,
    ),
    ClaimSpec(
        name="alpha_vs_relay_L{depth}",
        tests="toy_model",
        comparison="law",
        paper="000#1",
        statement=_Q_RELAY + ": at each depth the seed-mean alpha of untrained networks equals the relay model's "
        "over the same window",
        scope=_RELAY_ACROSS,
        quantity="seed-mean " + _ALPHA + " at one depth, against the relay model's",
        source=_RELAY_DEPTH_SOURCE,
        hypothesis="alpha = 1: dilution alone, no relay across layers",
        figure="pf_alpha_depth",
    ),
    ClaimSpec(
        name="alpha_falls_with_depth",
        tests="toy_model",
        comparison="sign",
        paper="000#1",
        statement=_Q_RELAY + ": in the relay model each layer adds a factor ln t, so over a fixed window alpha falls "
        "with depth L",
        scope=_RELAY_ACROSS,
        quantity="OLS slope of the last-layer alpha on L, per weight seed (1/layer)",
        source=_RELAY_DEPTH_SOURCE,
        hypothesis="alpha does not depend on depth (each layer only dilutes)",
        sign=-1,
        figure="pf_alpha_depth",
    ),
    ClaimSpec(
        name="alpha_depth_slope_matches_relay",
        tests="toy_model",
        comparison="law",
        paper="000#1",
        statement=_Q_RELAY + ": d alpha / dL of untrained networks over a fixed window equals the relay model's",
        scope=_RELAY_ACROSS,
        quantity="OLS slope of the last-layer alpha on L (1/layer), against the relay model's",
        source="seed's linear relay model: each layer adds a factor ln t (relay_alpha_window)",
        hypothesis="alpha independent of depth (no relay: each layer only dilutes)",
        figure="pf_alpha_summary",
        within_run="a claim about these models (one weight seed per depth): each alpha is fixed by its weights, its "
        "SE the bootstrap over prompt pairs",
    ),
    # ---- the paper's measured ranges
    ClaimSpec(
        name="alpha_untrained_seed_range",
        tests="paper",
        comparison="range",
        paper="000#1",
        statement=_Q_RANGES + ": an untrained pre-LN softmax network's alpha lies in [0.2, 0.5]",
        scope=_AT_SCALE,
        quantity=_ALPHA + " (seed mean with replicates)",
        source=SEED_SOURCE,
        figure="pf_alpha_summary",
        full=True,
    ),
    ClaimSpec(
        name="alpha_trained_seed_range",
        tests="paper",
        comparison="range",
        paper="000#1",
        statement=_Q_RANGES + ": a trained pre-LN softmax network's alpha lies in [0.55, 0.7]",
        scope=_AT_SCALE + "; trained 600-2000 updates on corpus or Markov text, one weight seed",
        quantity=_ALPHA,
        source=SEED_SOURCE,
        figure="pf_alpha_summary",
        full=True,
    ),
    ClaimSpec(
        name="alpha_seed_range",
        tests="paper",
        comparison="range",
        paper="000#1",
        statement=_Q_RANGES + " (a passed-in model: the probe cannot tell which range applies)",
        scope="not checked: a passed-in model's training and norm placement are unknown to the probe, so neither "
        "range's hypotheses are known to hold (the claim is recorded as not evaluated)",
        quantity=_ALPHA,
        source=SEED_SOURCE,
    ),
    ClaimSpec(
        name="alpha_untrained_seed_range_deepest",
        tests="paper",
        comparison="range",
        paper="000#1",
        statement=_Q_RANGES + ": at the deepest depth of the sweep the seed-mean alpha of untrained networks lies in "
        "[0.2, 0.5]",
        scope=_AT_SCALE,
        quantity="seed-mean " + _ALPHA + " at the deepest L",
        source="seed paper: untrained models alpha 0.2-0.5",
        figure="pf_alpha_depth",
    ),
    ClaimSpec(
        name="trained_forgets_faster",
        tests="paper",
        comparison="sign",
        paper="000#1",
        statement=_Q_RANGES + ": at equal architecture and depth, alpha_trained - alpha_untrained > 0",
        scope="not met: the paper's trained models are large LMs trained to convergence; here tiny pre-LN softmax "
        "twins (equal by construction but for training) trained 600-2000 updates, one weight seed",
        quantity="alpha_trained - alpha_untrained of the last layer (1)",
        source="seed: trained models forget fast (alpha 0.55-0.7), untrained ones slowly (0.2-0.5)",
        hypothesis="training does not change the forgetting exponent",
        sign=1,
        figure="pf_alpha_summary",
        full=True,
    ),
    # ---- the paper's intervention: the dilution-cancelling bias
    ClaimSpec(
        name="bias_stops_decay",
        tests="paper",
        comparison="law",
        paper="000#1",
        statement=_Q_BIAS + ": an untrained network with the cancelling bias has alpha = 0",
        scope=_BIAS_SCOPE,
        quantity="last-layer alpha with the cancelling bias (1), against the unbiased alpha",
        source=BIAS_SOURCE,
        hypothesis="dilution is not what makes the prompt fade: the bias leaves alpha at its unbiased value",
        figure="pf_bias_training",
        within_run=ONE_MODEL,
    ),
    ClaimSpec(
        name="bias_stops_decay_step{step}",
        tests="paper",
        comparison="law",
        paper="000#1",
        statement=_Q_BIAS + ": at a checkpoint <= 1% of training, alpha with the cancelling bias = 0",
        # the trained run's own scope check (a run outside the dilution regime cannot test a dilution mechanism);
        # not checked beyond it: _BIAS_SCOPE, and "early in training" read as <= 1% of the updates
        scope=("condition_dilution_regime",),
        quantity="last-layer alpha with the cancelling bias at the checkpoint (1), against the unbiased alpha there",
        source=BIAS_SOURCE,
        hypothesis="the bias does not change alpha (dilution is not what makes the prompt fade)",
        figure="pf_bias_training",
        within_run=ONE_MODEL,
    ),
    ClaimSpec(
        name="bias_reverses_decay_trained",
        tests="paper",
        comparison="sign",
        paper="000#1",
        statement=_Q_BIAS + ": after training, with the cancelling bias alpha < 0 (the offset grows)",
        # as above; "after training" read as the last checkpoint of one short training run
        scope=("condition_dilution_regime",),
        quantity="last-layer alpha with the cancelling bias at the last checkpoint (1)",
        source=BIAS_SOURCE,
        hypothesis=_STOPS_ONLY,
        sign=-1,
        figure="pf_bias_training",
        full=True,
        within_run=ONE_MODEL,
    ),
    ClaimSpec(
        name="bias_reverses_decay",
        tests="paper",
        comparison="sign",
        paper="000#1",
        statement=_Q_BIAS + ": a trained model with the cancelling bias has alpha < 0 (the offset grows)",
        scope=_BIAS_SCOPE,
        quantity="last-layer alpha of the trained model with the cancelling bias (1)",
        source=BIAS_SOURCE,
        hypothesis=_STOPS_ONLY,
        sign=-1,
        figure="pf_bias_training",
        full=True,
        within_run=ONE_MODEL,
    ),
)
