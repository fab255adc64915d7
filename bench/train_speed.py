"""One training epoch: cyrbm CD-1 and PCD-1 against scikit-learn's BernoulliRBM.

Trains a binary RBM for one epoch with cyrbm's public API,
``cyrbm.Trainer(H, method="cd"|"pcd", k=1, epochs=1, batch_size=B, monitor_size=0,
progress=False, seed=0).fit(X)``, then scikit-learn's ``BernoulliRBM`` (PCD-1, the same
sizes and batch, ``n_iter=1``, float32 input: its fastest path) on the same data, and
prints seconds per epoch and the ratios.  For context it also times the dense floor:
the five float32 matrix products of one CD step done with NumPy's BLAS
(v@W, h@W.T, v'@W, v.T@p(h|v), v'.T@p(h|v'), each 100 x 784 x 500 multiply-adds at the
default sizes) for as many mini-batches as one epoch has.

Each figure is the minimum of --repeat runs.  cyrbm and scikit-learn times are whole
``fit`` calls (set-up included); cyrbm's own per-epoch time (from its history) is shown
too.  scikit-learn and threadpoolctl are optional: without scikit-learn its line says so.

Usage:
  train_speed.py [DATA] [options]

Arguments:
  DATA                A data file or bundled data set for cyrbm.load_data (grey data are
                      binarized at 0.5); default: synthetic Bernoulli data.

Options:
  --rows=N            Rows of synthetic data [default: 60000].
  --visible=D         Visible units of synthetic data [default: 784].
  --density=P         Probability of a 1 in synthetic data [default: 0.13].
  --hidden=H          Hidden units [default: 500].
  --batch=B           Mini-batch size [default: 100].
  --repeat=R          Runs of each measurement; the minimum is reported [default: 3].
  --threads=T         cyrbm threads (default: all cores; BLAS keeps its own default).
  --no-sklearn        Do not run scikit-learn.
  -h --help           Show this text.
"""
import os
import platform
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm


def best_of(repeat, fn):
    """(minimum seconds, last result) over ``repeat`` calls of fn()."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def blas_description():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl not installed: BLAS kernel unknown"]
    lines = []
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            lines.append(f"{info.get('internal_api')} {info.get('version')} kernel "
                         f"{info.get('architecture', '?')}, {info.get('num_threads')} threads "
                         f"({os.path.basename(info.get('filepath', ''))})")
    return lines or ["no BLAS found by threadpoolctl"]


def dense_floor(X, n_hidden, batch, repeat, rng):
    """Seconds for the five float32 products of a CD step, for every mini-batch of an epoch."""
    n, D = X.shape
    n_batches = -(-n // batch)
    W = (0.01 * rng.standard_normal((D, n_hidden))).astype(np.float32)
    v0 = X[:batch].astype(np.float32)
    v1 = X[batch:2 * batch].astype(np.float32) if n >= 2 * batch else v0.copy()
    h = (rng.random((batch, n_hidden)) < 0.5).astype(np.float32)
    p0 = rng.random((batch, n_hidden), dtype=np.float32)
    p1 = rng.random((batch, n_hidden), dtype=np.float32)

    def epoch():
        for _ in range(n_batches):
            v0 @ W
            h @ W.T
            v1 @ W
            v0.T @ p0
            v1.T @ p1

    return best_of(repeat, epoch)[0]


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    repeat = int(args["--repeat"])
    H, B = int(args["--hidden"]), int(args["--batch"])
    threads = None if args["--threads"] is None else int(args["--threads"])
    rng = np.random.default_rng(0)
    if args["DATA"]:
        X = cyrbm.load_data(args["DATA"], binarize="threshold")
        source = args["DATA"]
    else:
        n, D, p = int(args["--rows"]), int(args["--visible"]), float(args["--density"])
        X = (rng.random((n, D), dtype=np.float32) < p).astype(np.uint8)
        source = f"synthetic Bernoulli({p})"
    n, D = X.shape
    cfg = cyrbm.config()
    print(f"data: {source}, {n} x {D}, density {X.mean():.3f}; {H} hidden, batch {B}, "
          f"one epoch ({-(-n // B)} mini-batches), best of {repeat}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"cyrbm {cfg['version']}, OpenMP {'on' if cfg['openmp'] else 'off'}, "
          f"{threads or cfg['threads']} threads, kernels {cfg['kernels']}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        print(f"  {var}={os.environ.get(var, '(unset)')}")
    for line in blas_description():
        print(f"  BLAS: {line}")
    print()

    results = {}
    for method in ("cd", "pcd"):
        def fit():
            trainer = cyrbm.Trainer(H, method=method, k=1, epochs=1, batch_size=B,
                                    monitor_size=0, progress=False, seed=0, threads=threads)
            trainer.fit(X)
            return trainer.history[0]["seconds"]
        seconds, epoch_only = float("inf"), float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            epoch_only = min(epoch_only, fit())
            seconds = min(seconds, time.perf_counter() - t0)
        results[method] = seconds
        print(f"cyrbm {method.upper()}-1:           {seconds:7.3f} s per fit "
              f"(epoch loop alone {epoch_only:.3f} s)")

    floor = dense_floor(X, H, B, repeat, rng)
    print(f"dense floor (5 float32 BLAS products x {-(-n // B)}): {floor:7.3f} s")

    sk = None
    if args["--no-sklearn"]:
        print("scikit-learn: skipped (--no-sklearn)")
    else:
        try:
            from sklearn.neural_network import BernoulliRBM
        except ImportError:
            print("scikit-learn: NOT INSTALLED, no comparison "
                  "(pip install scikit-learn threadpoolctl, or cyrbm[bench])")
        else:
            import sklearn
            X32 = X.astype(np.float32)

            def sk_fit():
                BernoulliRBM(n_components=H, batch_size=B, n_iter=1, learning_rate=0.05,
                             random_state=0, verbose=0).fit(X32)

            sk, _ = best_of(repeat, sk_fit)
            print(f"scikit-learn {sklearn.__version__} BernoulliRBM (PCD-1, float32): "
                  f"{sk:7.3f} s per fit")

    print()
    for method in ("cd", "pcd"):
        parts = [f"cyrbm {method.upper()}-1 is {floor / results[method]:.2f}x the dense floor's speed"]
        if sk is not None:
            parts.insert(0, f"{sk / results[method]:.2f}x faster than scikit-learn")
        print(f"{method.upper()}-1: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
