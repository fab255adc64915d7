"""What the bench/paper/ scripts share: the data (Fashion-MNIST, real MNIST, the bundled
digits), the table beside the paper's numbers, and figures written atomically.

Not a script: imported by the scripts beside it.
"""
import io
import os
import time

import numpy as np

import cyrbm
from cyrbm._io import atomic_write

#: the repository's root (bench/paper/../..): the scripts' default paths start from it,
#: wherever they are run from
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Debian's dataset-fashion-mnist: MNIST's IDX format, 28 x 28 grey images
FASHION = "/usr/share/datasets/fashion-mnist"
_FILES = {"train": "train-images-idx3-ubyte.gz", "test": "t10k-images-idx3-ubyte.gz"}
_LABELS = {"train": "train-labels-idx1-ubyte.gz", "test": "t10k-labels-idx1-ubyte.gz"}


def parse_args(usage, argv=None):
    """docopt's options for ``usage``, where a default path written ``<repo>/...`` is
    taken from the repository's root (the usage printed by ``--help`` shows it so)."""
    from docopt import docopt
    return docopt(usage.replace("<repo>/", ROOT + os.sep), argv=argv)


def image_files(mnist=None):
    """The directory of the IDX files: ``mnist`` (real MNIST, as its four files) or
    Fashion-MNIST; and the data set's name for the tables."""
    if mnist:
        return mnist, "MNIST"
    return FASHION, "Fashion-MNIST (not MNIST: its ln p values are not comparable)"


def load_images(mnist=None, n_train=None, n_test=None, seed=0, labels=False):
    """(train, test) 0/1 uint8 rows, binarized stochastically as SM08 (each pixel on with
    probability its intensity; one draw, fixed by ``seed``), the first ``n_train`` and
    ``n_test`` rows; with ``labels``, also their labels."""
    root, _ = image_files(mnist)
    out = []
    for i, part in enumerate(("train", "test")):
        path = os.path.join(root, _FILES[part])
        if not os.path.exists(path):
            path = path[:-3]                    # an uncompressed copy
        if not os.path.exists(path):
            raise SystemExit(
                f"no {_FILES[part]} (or its uncompressed copy) in {root}: "
                + ("give the folder of real MNIST's four IDX files." if mnist else
                   "install Debian's dataset-fashion-mnist, or give real MNIST with --mnist DIR."))
        X = cyrbm.load_data(path, binarize="stochastic", seed=seed + i)
        n = n_train if part == "train" else n_test
        out.append(np.ascontiguousarray(X[:n]) if n else X)
        if labels:
            lab = os.path.join(root, _LABELS[part])
            if not os.path.exists(lab):
                lab = lab[:-3]
            y = _read_idx_labels(lab)
            out.append(y[:n] if n else y)
    return tuple(out)


def _read_idx_labels(path):
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    return np.frombuffer(raw, dtype=np.uint8, offset=8)


def print_table(title, header, rows):
    """A plain table: ``rows`` of cells (numbers printed to 2 decimals)."""
    def cell(x):
        if isinstance(x, float):
            return "-inf" if x == -np.inf else f"{x:.2f}"
        return str(x)
    cells = [[cell(x) for x in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def check(label, ok, detail):
    """Print one of the paper's comparisons as it holds (or not) here, with numbers."""
    print(f"[{'holds' if ok else 'DOES NOT HOLD'}] {label}: {detail}")
    return bool(ok)


def figure():
    """matplotlib's pyplot with the Agg backend (the ``plot`` extra)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path):
    """Write ``fig`` to ``path`` (PNG) atomically and close it."""
    plt = figure()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, lambda f: f.write(buf.getvalue()))
    print(f"figure: {path}")


class Clock:
    """Seconds of processor time (this process) and of wall time since creation."""
    def __init__(self):
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()

    def cpu(self):
        return time.process_time() - self.cpu0

    def wall(self):
        return time.perf_counter() - self.wall0


def first_runs(res, n):
    """The AIS estimate ``res`` (an AISResult) from its first ``n`` runs only: ln Z-hat
    against the number of runs (SM08 Figure 3) from one set of runs."""
    from cyrbm.estimators.results import AISResult
    return AISResult(kind=res.kind, log_weights=res.log_weights[:n], log_Z_base=res.log_Z_base,
                     betas=res.betas, runs=n, seconds=res.seconds * n / res.runs,
                     threads=res.threads, dtype=res.dtype, seed=res.seed,
                     schedule=res.schedule)


def log_sd(res):
    """sigma-hat of ln Z-hat (or ln r-hat) by the delta method: sigma-hat / Z-hat."""
    import math
    return math.exp(res.log_sigma_ratio - res.log_ratio)


def cached(path, compute):
    """``compute()``'s result, pickled at ``path`` (atomically) the first time and read
    back after: a long stage of a full-size run is not repeated when the run resumes."""
    import pickle
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    out = compute()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, lambda f: pickle.dump(out, f))
    return out


def train_or_load(path, n_hidden, X, **kw):
    """The RBM saved at ``path``, or one trained on ``X`` by Trainer(n_hidden, **kw) and
    saved there (atomically) for the next script; with the seconds training took."""
    if path and os.path.exists(path):
        return cyrbm.RBM.load(path), 0.0
    clock = Clock()
    model = cyrbm.Trainer(n_hidden, progress=False, monitor_size=0, **kw).fit(X)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        model.save(path)
    return model, clock.wall()


def greedy_top(rbm1, X, n_top, path, *, start="random", seed=0, **kw):
    """A two-layer DBN on the frozen ``rbm1`` (SM08 Sec. 4.1): a top RBM of ``n_top``
    hidden units trained by Trainer(**kw) on samples of Q(h1 | v) (cyrbm.training.greedy.up_pass),
    from random weights or (``start="transpose"``) SM08's "W2 = W1^T": its first
    n_visible hidden units are rbm1's visible units (W1^T, biases swapped), the others
    start with zero weights and hidden biases -10 (together at most n softplus(-10), a few
    hundredths of a nat), so the DBN starts as rbm1.  Saved at ``path`` and reused; while
    it trains, a checkpoint beside ``path`` lets a stopped run resume (bit-identically)."""
    from cyrbm.training.greedy import up_pass
    if path and os.path.exists(path):
        return cyrbm.DBN([rbm1, cyrbm.RBM.load(path)]), 0.0
    clock = Clock()
    H = up_pass(rbm1, X, seed=seed)
    ckpt = path[:-len(".npz")] + ".checkpoint.npz" if path else None
    if ckpt:
        os.makedirs(os.path.dirname(os.path.abspath(ckpt)), exist_ok=True)
    if ckpt and os.path.exists(ckpt):
        top = cyrbm.Trainer(n_top, seed=seed + 1, progress=False, monitor_size=0,
                            checkpoint=ckpt, **kw).fit(H, resume=True)
        top.save(path)
        os.remove(ckpt)
        return cyrbm.DBN([rbm1, top]), clock.wall()
    model = None
    if start == "transpose":
        extra = n_top - rbm1.n_visible
        model = cyrbm.RBM(np.hstack([rbm1.W.T, np.zeros((rbm1.n_hidden, extra), rbm1.dtype)]),
                          rbm1.hbias, np.concatenate([rbm1.vbias,
                                                      np.full(extra, -10.0, rbm1.dtype)]),
                          dtype=rbm1.dtype)
    top = cyrbm.Trainer(n_top, seed=seed + 1, progress=False, monitor_size=0,
                        checkpoint=ckpt, **kw).fit(H, model=model)
    if path:
        top.save(path)
        os.remove(ckpt)
    return cyrbm.DBN([rbm1, top]), clock.wall()


#: the RBM training of the SM08 scripts (SM08 state none of it), shared so that
#: sm08_table1.py, sm08_table2.py and ms09.py train (and reuse) the same models
SM08_TRAIN = dict(batch_size=100, learning_rate=0.05, momentum=0.5, weight_decay=2e-4)


def sm08_rbm(X, k, n_hidden, models, quick, epochs, seed, threads):
    """SM08's CDk(n_hidden) (k = 1, 3 or "1:25"), trained on ``X`` or read from
    ``models``/quick|full/; with the seconds its training took (0 when read)."""
    tag = "quick" if quick else "full"
    name = f"cd{str(k).replace(':', 'to')}_{n_hidden}_e{epochs}.npz"
    path = os.path.join(models, tag, name)
    return train_or_load(path, n_hidden, X, k=k, epochs=epochs, seed=seed, threads=threads,
                         **SM08_TRAIN)


def option(args, name, quick_value):
    """``quick_value`` under --quick, else the whole number given as option ``name``."""
    return quick_value if args["--quick"] else int(args[name])


def sm08_setup(args, quick_train=10000, quick_test=2000):
    """The SM08/MS09 scripts' start: (seed, threads, X, T, data set name, test labels),
    the images cut to ``quick_train`` and ``quick_test`` rows under --quick."""
    quick = args["--quick"]
    seed, threads = int(args["--seed"]), int(args["--threads"])
    X, _, T, labels = load_images(args["--mnist"], quick_train if quick else None,
                                  quick_test if quick else None, seed=seed, labels=True)
    return seed, threads, X, T, image_files(args["--mnist"])[1], labels
