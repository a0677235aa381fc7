"""What the declared claims of ``attention_only`` share: the scope sentences, quotations and sources that several groups
of claims name."""

Q_CONV = "«a single ViT layer with image patches as the input can perform any convolution operation constructively»"
Q_IND = (
    "«induction heads mechanism, which requires at least two layers attention»; «KV shifting attention reducing the "
    "model's requirements for the depth and width of the induction heads mechanism»"
)
Q_RANK = (
    "«a simple and natural target function that can be represented using a single full-rank attention head for any "
    "context length, but that cannot be approximated by low-rank attention unless the number of heads is exponential "
    "in the embedding dimension»"
)
Q_SR = (
    "«routing matrices (Q/K) crystallize early, content matrices accumulate rank slowly, and removing feed-forward "
    "layers relocates this accumulation to the attention output projection»"
)
Q_QKNORM = (
    "«QK-normalization, not feed-forward layers or residual gating, keeps 48-layer attention-only stacks trainable»"
)
CONV_LAYER = (
    "by construction: the trained layers are content-free (uniform kernel plus a relative-position bias, no norm, "
    "no residual, no MLP: linear) and the error is their exact population error on white Gaussian inputs over the "
    "rows t >= K - 1, as the derivation assumes"
)
# the deep stacks' seeds: an undecided growth or loss claim at 3 seeds runs again at 8, then 24
# (analysis.probing.sequential)
DEEP_LOOKS = (3, 8, 24)
SAN_SCALE = (
    "not checked: the paper's regime (6M-87M parameters, up to 105B tokens of web text) is not the run's; here "
    "width-32 models (16 and 64 for the trend with width) trained 300 updates on a character corpus, the matched "
    "depth derived from the parameter count"
)
STABLE_RANK = (
    "not checked: the paper reads weight spectra of models pretrained at scale; here the stable rank of width-32 "
    "models over 300 updates on a character corpus, from mid-training to the end"
)
NN_FLOOR = (
    "not checked: A(r) binds H heads of rank r whose query projections are orthogonal (H r = d); the trained heads' "
    "projections are free (they may overlap or be oblique) and the run does not measure them"
)
