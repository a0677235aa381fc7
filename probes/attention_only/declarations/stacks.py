"""The declared claims of ``attention_only``: attention-only networks and their rank collapse (004#1)."""

from analysis.claims.specs import ClaimSpec
from probes.attention_only.config import SOURCE

_Q_SR = (
    "«routing matrices (Q/K) crystallize early, content matrices accumulate rank slowly, and removing feed-forward "
    "layers relocates this accumulation to the attention output projection»"
)
_Q_QKNORM = (
    "«QK-normalization, not feed-forward layers or residual gating, keeps 48-layer attention-only stacks trainable»"
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

SPECS = (
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
