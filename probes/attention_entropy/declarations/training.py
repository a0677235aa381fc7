"""The declared claims of ``attention_entropy``: the trained models' entropy."""

from analysis.claims.specs import ClaimSpec
from probes.attention_entropy.declarations.common import SPECTRAL

_WORTSMAN = "Wortsman et al. 2023, Small-scale proxies for large-scale Transformer training instabilities"

SPECS = (
    # ----------------------------------------------------------------------------------------------------- training
    ClaimSpec(
        name="spectral_bound_holds_trained",
        tests="derivation",
        comparison="bound",
        paper="zhai2023",
        statement="our Cauchy-Schwarz form of Zhai et al.'s bound on trained weights: every row has H >= ln(1 + (n-1) "
        "exp(-2 c ||W_q^T W_k||_2 |x_i| max_j |x_j|))",
        scope=SPECTRAL,
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
)
