"""The references of the softmax-alternatives probe: the seed paper behind each part's claims (its key in
``shared/SEED_CATALOGUE.md``) and the theory module its closed forms live in."""

SEED_SLOTS = "000#40"  # Shen et al. 2023: ReLU against softmax key-value memories
SEED_SPARSE = "000#29"  # sparse (alpha-entmax) attention assigns exact zeros to irrelevant tokens
SEED_IRRELEVANT = "004#5"  # length generalisation: softmax cannot fully remove irrelevant information
SEED_INTERVAL = "000#16"  # K-interval attention: the exponential from K + 1 grid values
SEED_MIMETIC = "000#115"  # mimetic initialisation: W_q W_k^T near the identity
SEED_FEATURES = "003#74"  # Linear Log-Normal attention: the concentration of kernelised attention's weights
SEED_JACOBIAN = "000#23"  # SA-Softmax: z * softmax(z) against softmax's vanishing gradient
SEED_TAYLOR = "000#51"  # Hedgehog: spiky and monotonic feature maps for linear attention
SEED_ISOLATION = "000#118"  # normalised attention without the probability cage: token isolation at init
SEED_BILINEAR = "003#57"  # bilinear MLPs: weight-based interpretability by eigendecomposition
SEED_LINEARITY = "003#37"  # "Your transformer is secretly linear": layer-to-layer linearity and the residual
SEED_DENOMINATOR = "003#31"  # TransNormer: the scaling of linear attention and its unbounded gradients
SEED_SHAPED = "004#82"  # simplified (skipless, shaped-attention) transformer blocks: the token kernel at init
SEED_SIGMOID = "004#109"  # sigmoid self-attention: the bias -ln n and the initial attention norm
SEED_SOFTPLUS = "000#85"  # softmax split into a nonlinearity and the l1 norm: softplus attention across lengths
SEED_COG = "004#28"  # Cog attention: negative weights (SignExp) against representational collapse
SEED_PERSISTENT = "004#90"  # persistent memory vectors in self-attention in place of the feed-forward layer
SEED_PARALLEL = "000#96"  # three things about ViTs, insight 1: a block's residual layers processed in parallel
SOURCE = "analysis/theory/softmax_alternatives.py"
