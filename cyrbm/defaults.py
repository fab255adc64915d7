"""The defaults of cyrbm's settings, each stated once.

The API's signatures read them, and so does the command line's usage text (cyrbm/cli/
parse.py formats them into ``cyrbm --help``, which the generated CLI reference in docs/
shows), so the two cannot drift apart.  Plain constants and no imports: the command line
reads them before NumPy and the kernels load.
"""

# ----------------------------------------------------------- Trainer (cyrbm.training.trainer)
N_HIDDEN = 100
METHOD = "cd"
K = 1
EPOCHS = 10
BATCH_SIZE = 100
LEARNING_RATE = 0.05
MOMENTUM = 0.5
WEIGHT_DECAY = 2e-4
SEED = 0
#: least seconds between checkpoints (bench/checkpoint_cost.py)
CHECKPOINT_SECONDS = 5.0
#: AMH (Hu & Yu): the hop probability p, the mode set's capacity K and weighting of H,
#: and the updates between rebuilds of the mode set
HOP_PROB = 0.1
MODES = 10
HOP_WEIGHT = "uniform"
MODE_EVERY = 100
#: PT with an adaptive ladder: updates between re-tunings
ADAPT_EVERY = 50
#: PTT training (cyrbm.models.tempering.TrajectoryChains): the current model is frozen as a new
#: rung when its swap rate with the last rung, over at least PTT_WINDOW updates, falls
#: below SWAP_THRESHOLD; at most MAX_RUNGS rungs
SWAP_THRESHOLD = 0.3
MAX_RUNGS = 32
PTT_WINDOW = 10
#: tracked ln Z (cyrbm.training.tracking): AIS runs each way, betas of each link's linear
#: schedule (at first) and Gibbs sweeps before the runs, between neighbouring
#: checkpoints: about 10% of the training time on 784 x 500 (bench/track_cost.py).
#: Fewer burn-in sweeps biased the first epoch's link on MNIST-like digits (5 sweeps:
#: 3 to 8 of its standard errors too low; cyrbm.training.tracking)
TRACK_RUNS = 16
TRACK_BETAS = 30
TRACK_BURN_IN = 50
#: times a link short of overlap is run again with 2 to 16 times the betas (cyrbm.training.tracking):
#: none by default, for the cost; 2 (then a fixed factor 4) made the error bars of a 784 x 500 run 7 times
#: smaller and cost +42% of its CPU time in its first 3 epochs (bench/README.md)
TRACK_REFINE = 0
#: updates between Trainer(track_overlap=...)'s checks of the overlap with the last rung
#: (each weighs the TRACK_RUNS carried draws under two models: two free energies of 16 rows)
TRACK_OVERLAP_EVERY = 10

# ---------------------------------------------------- Annealer (cyrbm.estimators.annealing)
AIS_RUNS = 100
SCHEDULE = "paper"
#: how ratio runs start (SM08 Sec. 3.2): exact draws of model A when its smaller layer is
#: small enough (cyrbm.models.exact.EXACT_START_UNITS), else Gibbs chains
RATIO_START = "auto"
#: Gibbs sweeps before a ratio run's chain gives its first state: chains started at data
#: need many on trained models (1,000 sweeps measurably biased ln(Z_B / Z_A))
RATIO_BURN_IN = 20000
#: Gibbs sweeps between the states one chain gives
RATIO_STEPS_BETWEEN = 100
#: reverse (RAISE) chains per test row (cyrbm.estimators.evaluation)
RAISE_CHAINS = 10

# ------------------------------------------- DBN bounds (cyrbm.estimators.bounds, cyrbm.estimators.chib)
#: samples of Q(h | v) per vector: the variational bound (SM08 Eq. 19-24), harmonic mean
VARIATIONAL_SAMPLES = 1
HARMONIC_SAMPLES = 100
#: the Chib-style estimator (MS09): Markov chain steps S and estimates per vector
CHIB_STEPS = 40
CHIB_REPEATS = 1
#: per-vector AIS over h1 (MS09 Sec. 5.1): runs per vector, betas of its linear schedule
AIS_PER_VECTOR_RUNS = 16
AIS_PER_VECTOR_BETAS = 1000

# ------------------------------------------------------ sampling (cyrbm.models.rbm)
#: block-Gibbs sweeps of each sample's chain (RBM.sample)
SAMPLE_STEPS = 1000
