"""The declared claims of ``attention_entropy``: trained retrieval (000#6) and trained sigmoid attention (000#17)."""

from analysis.claims.specs import ClaimSpec
from probes.attention_entropy.declarations.common import Q_SIGMOID_NORMS
from probes.attention_entropy.retrieval import RETRIEVAL_SOURCE
from probes.attention_entropy.sigmoid_trained import SIGMOID_TRAINED_SOURCE

SPECS = (
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
        statement="the paper identifies " + Q_SIGMOID_NORMS + " of sigmoid attention; the bias b = -ln n lowers the "
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
