"""The declared claims of ``attention_only``: induction heads (004#24)."""

from analysis.claims.specs import ClaimSpec
from probes.attention_only.config import SOURCE
from probes.attention_only.induction import FAILS

_Q_IND = (
    "«induction heads mechanism, which requires at least two layers attention»; «KV shifting attention reducing the "
    "model's requirements for the depth and width of the induction heads mechanism»"
)

SPECS = (
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
)
