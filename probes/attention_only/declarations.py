"""The declared claims of attention_only: the convolution construction and the Eckart-Young head bound (004#89), the
KV-shift induction construction and the position-free ceiling (004#24), rank against heads on nearest-neighbour search
(004#72), and attention-only networks: matched parameters, QK-norm in deep stacks, stable ranks (004#1). The three
max-logit claims of the deep stacks are scope checks: the loss-spike and loss claims name them as their regime."""

from analysis.claims.specs import ClaimSpec, declare
from probes.attention_only.config import SOURCE
from probes.attention_only.induction import FAILS
from probes.attention_only.nearest_neighbour import NN_BETA_EXACT, NN_THRESHOLD

_Q_CONV = "«a single ViT layer with image patches as the input can perform any convolution operation constructively»"
_Q_IND = (
    "«induction heads mechanism, which requires at least two layers attention»; «KV shifting attention reducing the "
    "model's requirements for the depth and width of the induction heads mechanism»"
)
_Q_RANK = (
    "«a simple and natural target function that can be represented using a single full-rank attention head for any "
    "context length, but that cannot be approximated by low-rank attention unless the number of heads is exponential "
    "in the embedding dimension»"
)
_Q_SR = (
    "«routing matrices (Q/K) crystallize early, content matrices accumulate rank slowly, and removing feed-forward "
    "layers relocates this accumulation to the attention output projection»"
)
_Q_QKNORM = (
    "«QK-normalization, not feed-forward layers or residual gating, keeps 48-layer attention-only stacks trainable»"
)

_CONV_LAYER = (
    "by construction: the trained layers are content-free (uniform kernel plus a relative-position bias, no norm, "
    "no residual, no MLP: linear) and the error is their exact population error on white Gaussian inputs over the "
    "rows t >= K - 1, as the derivation assumes"
)
# the deep stacks' seeds: an undecided growth or loss claim at 3 seeds runs again at 8, then 24
# (analysis.probing.sequential)
_DEEP_LOOKS = (3, 8, 24)
_SAN_SCALE = (
    "not checked: the paper's regime (6M-87M parameters, up to 105B tokens of web text) is not the run's; here "
    "width-32 models (16 and 64 for the trend with width) trained 300 updates on a character corpus, the matched "
    "depth derived from the parameter count"
)
_STABLE_RANK = (
    "not checked: the paper reads weight spectra of models pretrained at scale; here the stable rank of width-32 "
    "models over 300 updates on a character corpus, from mid-training to the end"
)
_NN_FLOOR = (
    "not checked: A(r) binds H heads of rank r whose query projections are orthogonal (H r = d); the trained heads' "
    "projections are free (they may overlap or be oblique) and the run does not measure them"
)

DECLARED = declare(
    "attention_only",
    # ---------------------------------------------------------------------------------------- convolution (004#89)
    ClaimSpec(
        name="conv_by_attention_exact",
        tests="software",
        comparison="identity",
        paper="004#89",
        statement="one layer of K relative-position heads (bias 0 at offset h, -inf elsewhere; W_o,h = W_h) reproduces "
        "a K-tap causal convolution with zero padding, in float64 to rounding",
        quantity="largest relative difference from conv1d (dimensionless)",
        source=f"{SOURCE}, item 1: K heads, bias 0 at offset h and -inf elsewhere, W_o,h = W_h",
        figure="ao_convolution",
    ),
    ClaimSpec(
        name="conv_heads{h}_rel_mse_above_rank_bound",
        tests="derivation",
        comparison="bound",
        paper="004#89",
        statement="our derivation for the paper's construction (its lower bound on heads, 1-D causal): H content-free "
        "heads computing a K-tap convolution have relative MSE >= sum_(i>H) s_i^2 / sum s_i^2, Eckart-Young on the "
        "unfolded kernel",
        scope=_CONV_LAYER,
        quantity="population relative MSE of the best row and seed (dimensionless)",
        source=f"{SOURCE}, item 2: yhat_t = sum_s A_t[s] M, rank <= H; Eckart-Young on the unfolded kernel",
        relation=">=",
        figure="ao_convolution",
        full=True,
    ),
    ClaimSpec(
        name="conv_heads{taps}_at_pattern_floor",
        tests="derivation",
        comparison="bound",
        paper="004#89",
        statement="our derivation: with its softmax patterns fixed, a content-free layer's best maps are a "
        "least-squares fit, so K trained heads' relative MSE >= the floor their (finite-bias) patterns leave",
        scope=_CONV_LAYER,
        quantity="mean over seeds of the population relative MSE (dimensionless)",
        source=f"{SOURCE}, item 2 with the trained patterns fixed: the best maps M_h are a least-squares fit",
        relation=">=",
        figure="ao_convolution",
        full=True,
    ),
    ClaimSpec(
        name="conv_heads_K_reach_exact",
        tests="toy_model",
        comparison="prediction",
        paper="004#89",
        statement=f"the paper's construction: {_Q_CONV}; K trained content-free heads reach it (relative MSE -> 0)",
        scope="by construction: K content-free relative-position heads on white inputs, the construction's "
        "architecture; not met: the exact construction needs -inf biases (one-hot patterns), out of reach of "
        "finite trained softmax biases",
        quantity="population relative MSE of K trained heads, per seed (dimensionless)",
        source=f"{SOURCE}, items 1-2: K heads express the convolution exactly",
        hypothesis="K heads do no better than K - 1: the rank-(K - 1) bound",
        figure="ao_convolution",
        full=True,
    ),
    # ------------------------------------------------------------------------------------------ induction (004#24)
    ClaimSpec(
        name="kv_shift_construction_solves_induction",
        tests="software",
        comparison="identity",
        paper="004#24",
        statement="a hand-built one-layer, one-head KV-shift model (key onehot(x_(j-1)) through shift_k = (0, 1), "
        "value onehot(x_j)) predicts every held-out repeated position: accuracy 1",
        quantity="held-out accuracy at the repeated positions (fraction)",
        source=f"{SOURCE}, item 3: key at j = onehot(x_(j-1)) through shift_k = (0, 1), value onehot(x_j)",
        figure="ao_induction",
    ),
    ClaimSpec(
        name="kv_shift_off_is_plain_attention",
        tests="software",
        comparison="identity",
        paper="004#24",
        statement="a kv_shift model with shift (1, 0) computes exactly the logits of plain attention with the same "
        "weights (float64)",
        quantity="largest |logit difference| (nats)",
        source="analysis/zoo/model.py: k' = 1 k_t + 0 k_(t-1), v' likewise",
        figure="ao_induction",
    ),
    ClaimSpec(
        name="vanilla_one_layer_below_bag_ceiling",
        tests="derivation",
        comparison="bound",
        paper="004#24",
        statement="our derivation for the paper's claim that induction needs two layers: one position-free attention "
        "layer sees x_t and the multiset of its context, so its induction accuracy is at most the bag-of-tokens Bayes "
        "ceiling",
        scope="by construction: the model is one attention layer without positions or MLP on the induction task "
        "(distinct prefix tokens, uniform repeat offset), as the derivation assumes",
        quantity="held-out accuracy at the repeated positions, mean over seeds (fraction)",
        source=f"{SOURCE}, item 3: a position-free layer sees x_t and the multiset of the context",
        figure="ao_induction",
        full=True,
    ),
    ClaimSpec(
        name="{name}_solves_induction",
        tests="paper",
        comparison="prediction",
        paper="004#24",
        statement=f"{_Q_IND}: one KV-shift layer, or two vanilla layers, solve induction (issue 17: accuracy >= 0.9)",
        scope="by construction: one KV-shift layer without positions, or two vanilla layers with RoPE, attention "
        "only, trained on a synthetic induction task; not checked: the paper's trained language models at scale",
        quantity="held-out accuracy at the repeated positions, mean over seeds (fraction)",
        source="issue 17: one KV-shift layer, or two vanilla layers, >= 0.9",
        figure="ao_induction",
        full=True,
    ),
    ClaimSpec(
        name="{name}_beats_{base}",
        tests="paper",
        comparison="sign",
        paper="004#24",
        statement=f"{_Q_IND}: KV shifting, or a second layer, supplies the previous token the induction key needs",
        scope="by construction: paired models of one and two layers, with and without KV shift, attention only, on "
        "the same synthetic induction data; not checked: the paper's trained language models at scale",
        quantity="paired difference of held-out induction accuracy, per seed (fraction)",
        source="004#24: KV shifting (or a second layer) supplies the previous token the induction key needs",
        hypothesis="no difference in induction accuracy",
        sign=1,
        figure="ao_induction",
        full=True,
    ),
    ClaimSpec(
        name="vanilla_1_rope_fails_induction",
        tests="paper",
        comparison="prediction",
        paper="004#24",
        statement="«induction heads mechanism, which requires at least two layers attention»: one vanilla layer, "
        "even with positions, does not solve induction (issue 17: accuracy <= 0.2, near guessing the repeat's offset)",
        scope="by construction: one vanilla attention layer with RoPE and no MLP on the synthetic induction task; "
        "recorded only when guessing the offset stays below 0.2",
        quantity="held-out accuracy at the repeated positions, mean over seeds (fraction)",
        source=f"issue 17 (<= {FAILS}); {SOURCE}: offset guess 1/(T - 2L + 1)",
        hypothesis="one vanilla layer with positions solves induction",
        figure="ao_induction",
        full=True,
    ),
    # ----------------------------------------------------------------------------------- nearest neighbour (004#72)
    ClaimSpec(
        name="nn_full_head_construction_exact",
        tests="software",
        comparison="identity",
        paper="004#72",
        statement="one full-rank head with QK = beta I (beta = 1e7) and the key as value outputs the nearest key, its "
        "relative MSE within the hard-max bound (2 (N - 1) e^(-beta delta))^2 plus rounding (float64)",
        quantity="held-out relative MSE (dimensionless)",
        source=f"{SOURCE}, item 4: one head, QK = beta I (beta = {NN_BETA_EXACT:g}), value the key",
        figure="ao_rank_heads",
    ),
    ClaimSpec(
        name="nn_full_head_reaches_threshold",
        tests="paper",
        comparison="prediction",
        paper="004#72",
        statement=f"{_Q_RANK}; trained: relative MSE <= 0.1 (issue 17)",
        scope="by construction: one head of rank d (QK of full rank) on the nearest-neighbour task (unit keys, "
        "Gaussian queries), trained; the paper's statement is one of representation, not of training",
        quantity="held-out relative MSE, mean over seeds (dimensionless)",
        source=f"{SOURCE}, item 4: the construction's error -> 0 as beta -> inf; issue 17: <= {NN_THRESHOLD}",
        figure="ao_rank_heads",
        full=True,
    ),
    ClaimSpec(
        name="nn_full_head_at_its_learned_scale",
        tests="toy_model",
        comparison="prediction",
        paper="004#72",
        statement="the paper's full-rank construction (one head, QK = beta I, value the key) at the trained head's "
        "learned scale beta = tr M / d has the trained head's error (Monte Carlo of the construction)",
        scope="not checked: the construction's QK form is beta I; the trained form M is not exactly isotropic "
        "(its anisotropy |M - beta I| / |M| is reported, not tested)",
        quantity="held-out relative MSE, mean over seeds (dimensionless)",
        source=f"{SOURCE}, item 4: the construction's error at beta = tr M / d of the trained head's QK form M",
        hypothesis="the trained head ignores the query: the error of the best query-free output E[f | K]",
        figure="ao_rank_heads",
        full=True,
    ),
    ClaimSpec(
        name="nn_{name}_above_additive_floor",
        tests="derivation",
        comparison="bound",
        paper="004#72",
        statement="our derivation for the paper's low-rank heads: H heads of rank r on orthogonal query projections "
        "compute an additive function of the query's blocks, whose least relative MSE is the first-order Hoeffding "
        "residual A(r)",
        scope=_NN_FLOOR,
        quantity="held-out relative MSE, mean over seeds (dimensionless)",
        source=f"{SOURCE}, item 4: H heads of rank r compute sum_h g_h(A_h^T q, K); on orthogonal projections "
        "no additive function beats the first-order Hoeffding residual A(r)",
        relation=">=",
        figure="ao_rank_heads",
        full=True,
    ),
    ClaimSpec(
        name="nn_{name}_3x_worse",
        tests="paper",
        comparison="sign",
        paper="004#72",
        statement=f"{_Q_RANK}; H r = d low-rank heads: >= 3x worse (issue 17)",
        scope="not checked: the paper's separation is asymptotic (heads exponential in d); the run tests one "
        "finite d = 16 with N = 16 keys and H r = d heads",
        quantity="per-seed relative MSE of the low-rank heads minus 3x the full head's (dimensionless)",
        sign=1,
        figure="ao_rank_heads",
        full=True,
    ),
    ClaimSpec(
        name="nn_short_two_rank1_layers_close_half_gap",
        tests="paper",
        comparison="sign",
        paper="004#72",
        statement="«for short context lengths, adding depth allows the target to be approximated by low-rank "
        "attention» (issue 17: a second rank-1 layer closes >= half the gap to one full-rank head)",
        scope="by construction: a short context of N = 2 keys, one and two layers of d rank-1 heads against one "
        "rank-d head on the same data",
        quantity="per-seed (e1 - e2) - 0.5 (e1 - e_full) of held-out relative MSEs (dimensionless)",
        sign=1,
        figure="ao_rank_heads",
        full=True,
    ),
    # ----------------------------------------------------------------------- attention-only networks (004#1)
    ClaimSpec(
        name="san_param_count_formula",
        tests="software",
        comparison="identity",
        paper="004#1",
        statement="the closed-form parameter count equals num_params() for the standard, attention-only and "
        "MLP-deleted models and both deep stacks",
        quantity="largest |closed form - actual| (parameters)",
        source=f"{SOURCE}, item 5: embedding, blocks (attention, QK-norm, MLP, norms), final norm, read-out",
        figure="ao_san_matched",
    ),
    ClaimSpec(
        name="san_matched_params_residual",
        tests="software",
        comparison="identity",
        paper="004#1",
        statement="3L attention-only blocks hold the parameters of L standard blocks (MLP 4d) plus L d norm gains: "
        "the models' counts differ by the derived residual",
        quantity="attention-only minus standard parameter count (parameters)",
        figure="ao_san_matched",
    ),
    ClaimSpec(
        name="qk_norm_logit_bound_attained",
        tests="software",
        comparison="identity",
        paper="004#1",
        statement="a float64 QK-norm layer with W_k = W_q, constant gains and eps 0 attains the closed-form logit "
        "bound: largest |logit| / bound = 1",
        quantity="largest |logit| over the bound (dimensionless)",
        source=f"{SOURCE}, item 5: |scale q.k| <= scale (sqrt(dh) max|w_q|)(sqrt(dh) max|w_k|), equality at q = k",
        figure="ao_deep_qknorm",
    ),
    ClaimSpec(
        name="san_matched_params_gap_zero",
        tests="paper",
        comparison="prediction",
        paper="004#1",
        statement="reallocating the deleted feed-forward budget into attention depth closes the gap: at matched "
        "parameters «0.006 nats (0.27 percent of loss)»",
        scope=_SAN_SCALE,
        quantity="paired held-out loss, attention-only minus standard, per seed (nats)",
        figure="ao_san_matched",
        full=True,
        hypothesis="attention depth does not replace the MLPs: the matched model is as far behind as the standard "
        "with its MLPs deleted in place",
    ),
    ClaimSpec(
        name="san_matched_gap_falls_with_width",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement="the matched gap «0.006 nats (0.27 percent of loss)» is measured at 6M-87M parameters: re-run on "
        "tiny models, the finding is approached only if the gap falls as the models grow (its trend over the widths "
        "the zoo reaches)",
        scope=_SAN_SCALE,
        quantity="per-seed least-squares slope of the matched held-out loss gap in log2 width (nats per doubling)",
        source="004#1: at 6M-87M parameters the matched gap is 0.006 nats; "
        f"{SOURCE}, item 5: the attention-only depth matched at each width",
        hypothesis="the matched gap does not change with width",
        sign=-1,
        figure="ao_san_matched",
        full=True,
    ),
    ClaimSpec(
        name="san_matched_params_gap_within_seed_range",
        tests="paper",
        comparison="range",
        paper="004#1",
        statement="at matched parameters «0.006 nats (0.27 percent of loss)»; predicted «0.02 to 0.05 nat gap» on "
        "knowledge-dense text, measured «0.040»: |gap| <= 0.05 nats",
        scope=_SAN_SCALE,
        quantity="mean over seeds of the held-out loss gap (nats)",
        source="004#1 / issue 17: a standard and an attention-only model with equal parameters differ by <= 0.05 "
        "nats (0.006 at matched parameters, 0.040 measured on fineweb-edu)",
        figure="ao_san_matched",
        full=True,
    ),
    ClaimSpec(
        name="san_mlp_deletion_in_place_costs",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement="deleting feed-forward layers in place costs «0.47 nats at matched depth and 0.26 nats at matched "
        "FLOPs»",
        scope=_SAN_SCALE,
        quantity="paired held-out loss, MLP-deleted minus standard, per seed (nats)",
        source="004#1: deleting feed-forward layers in place costs 0.47 nats at matched depth",
        hypothesis="the MLPs add nothing at matched depth",
        sign=1,
        figure="ao_san_matched",
        full=True,
    ),
    ClaimSpec(
        name="deep_qknorm_max_logit_below_bound",
        tests="derivation",
        comparison="scope",
        paper="004#1",
        statement="our derivation for QK-norm: every logit obeys |logit| <= scale (sqrt(dh) max|w_q| + |b_q|) "
        "(sqrt(dh) max|w_k| + |b_k|) whatever the weights and input, so the stack with QK-norm has bounded logits",
        quantity="largest ratio of a layer's max |logit| to its bound, over updates, layers and seeds (dimensionless)",
        source=f"{SOURCE}, item 5: |logit| <= scale (sqrt(dh) max|w_q| + |b_q|)(sqrt(dh) max|w_k| + |b_k|)",
        relation="<=",
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="deep_no_qknorm_max_logit_grows",
        tests="paper",
        comparison="scope",
        paper="wortsman2023",
        statement="attention logits grow during training without QK-layernorm (attention logit growth), the "
        "instability QK-layernorm mitigates",
        quantity="per-seed ln(max |logit| over the last 10% of updates / at init), without QK-norm",
        replicates="deep_seeds",
        looks=_DEEP_LOOKS,
        sign=1,
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="deep_max_logit_grows_more_without_qknorm",
        tests="paper",
        comparison="scope",
        paper="wortsman2023",
        statement="QK-layernorm mitigates attention logit growth: the max logit grows more without it",
        quantity="per-seed ln-growth of the max |logit| without minus with QK-norm",
        replicates="deep_seeds",
        looks=_DEEP_LOOKS,
        sign=1,
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="deep_no_qknorm_loss_spikes",
        tests="paper",
        comparison="prediction",
        paper="004#1",
        statement=f"{_Q_QKNORM}: without QK-norm the deep stack does not train stably (issue 17: loss spikes in "
        "most runs)",
        scope=("deep_no_qknorm_max_logit_grows",),
        quantity="fraction of runs without QK-norm with a loss spike",
        source="004#1: QK-normalisation is what keeps 48-layer attention-only stacks trainable; issue 17: loss "
        "spikes without it",
        hypothesis="QK-norm makes no difference: runs without it spike as often as runs with it",
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="deep_qknorm_no_loss_spikes",
        tests="paper",
        comparison="prediction",
        paper="004#1",
        statement=f"{_Q_QKNORM}: with QK-norm the 48-layer stack trains (loss spikes in fewer than half the runs)",
        scope=("deep_qknorm_max_logit_below_bound",),
        quantity="fraction of runs with QK-norm with a loss spike",
        source="004#1: with QK-norm the 48-layer stack trains",
        hypothesis="QK-norm makes no difference: runs with it spike as often as runs without it",
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="deep_qknorm_reaches_lower_loss",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement=f"{_Q_QKNORM}: after the same updates the stack with QK-norm reaches a lower held-out loss",
        scope=("deep_max_logit_grows_more_without_qknorm",),
        quantity="paired held-out loss without minus with QK-norm, per seed (nats)",
        replicates="deep_seeds",
        looks=_DEEP_LOOKS,
        source="004#1: without QK-norm the 48-layer stack does not train, with it it does",
        hypothesis="QK-norm makes no difference to the loss reached",
        sign=1,
        figure="ao_deep_qknorm",
        full=True,
    ),
    ClaimSpec(
        name="sr_wo_still_grows",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement=f"{_Q_SR}: W_O's stable rank still grows in the second half of training",
        scope=_STABLE_RANK,
        quantity="per-seed relative change of W_O's stable rank, mid to end of training (mean over layers)",
        source="004#1: content matrices accumulate rank slowly; without FFNs in the attention output projection",
        hypothesis="W_O's stable rank has settled by mid-training",
        sign=1,
        figure="ao_stable_rank",
        full=True,
    ),
    ClaimSpec(
        name="sr_qk_settles_before_wo",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement=f"{_Q_SR}: in the second half W_O's stable rank moves more than that of W_q,h^T W_k,h",
        scope=_STABLE_RANK,
        quantity="per-seed change of W_O's stable rank minus |that of W_q,h^T W_k,h| (relative, mean over layers)",
        source="004#1: routing matrices (Q/K) crystallize early",
        hypothesis="the routing (W_q^T W_k) stable rank moves as much as W_O's in the second half",
        sign=1,
        figure="ao_stable_rank",
        full=True,
    ),
    ClaimSpec(
        name="sr_wo_accumulates_more_without_mlp",
        tests="paper",
        comparison="sign",
        paper="004#1",
        statement=f"{_Q_SR}: W_O's stable rank grows more in the attention-only model than in the standard one",
        scope=_STABLE_RANK,
        quantity="per-seed relative change of W_O's stable rank, attention-only minus standard (mean over layers)",
        source="004#1: removing feed-forward layers relocates this accumulation to the attention output projection",
        hypothesis="removing the MLPs does not move rank accumulation to W_O",
        sign=1,
        figure="ao_stable_rank",
        full=True,
    ),
)
