"""Fit time: cyrbm.sklearn.BernoulliRBM against scikit-learn's BernoulliRBM, same settings.

Three cases, each fitted by both estimators in the same run:

- MNIST-like 60,000 x 784 binary images (bench/mnistlike.py) -> 500 hidden units with
  scikit-learn's default settings (PCD-1, batch_size=10, n_iter=10, learning_rate=0.1):
  what a drop-in user gets, and the issue's target case;
- the same data with mini-batches of --batch for --epochs epochs, learning rate 0.05: large
  batches suit BLAS, and one epoch leaves the processes' imports a large share;
- scikit-learn's 8 x 8 digits (1797 x 64, min-max scaled grey: probabilities) -> 100
  hidden units, batch 10, 10 epochs, learning rate 0.06 (its example's settings).

Every fit runs in a fresh Python process that imports the estimator, loads the data
(written once to a temporary .npy) and calls ``fit``; the process's wall time (timed
with time.perf_counter around subprocess.run) is the "whole process" figure, and the
fit call alone is timed inside it.  Each figure is the minimum of --repeat processes.

Usage:
  sklearn_speed.py [options]

Options:
  --rows=N      MNIST-like rows [default: 60000].
  --epochs=E    Epochs on the MNIST-like data [default: 1].
  --batch=B     Mini-batch size on the MNIST-like data [default: 100].
  --repeat=R    Processes per figure; the minimum is reported [default: 1].
  --skip-defaults  Leave out the default-settings case (scikit-learn takes minutes).
  -h --help     Show this text.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from docopt import docopt

HERE = os.path.dirname(os.path.abspath(__file__))

FIT = """
import sys, time, numpy as np
t0 = time.perf_counter()
if sys.argv[1] == "cyrbm":
    from cyrbm.sklearn import BernoulliRBM
else:
    from sklearn.neural_network import BernoulliRBM
X = np.load(sys.argv[2])
rbm = BernoulliRBM(n_components=int(sys.argv[3]), batch_size=int(sys.argv[4]),
                   n_iter=int(sys.argv[5]), learning_rate=float(sys.argv[6]), random_state=0)
t1 = time.perf_counter()
rbm.fit(X)
print(time.perf_counter() - t1)
"""


def timed_process(which, path, hidden, batch, epochs, lr, repeat):
    """(whole-process seconds, fit seconds), the minimum of ``repeat`` processes."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FIT, which, path, str(hidden), str(batch),
                              str(epochs), str(lr)], check=True, capture_output=True,
                             text=True)
        whole = time.perf_counter() - t0
        best = min(best, (whole, float(out.stdout.split()[-1])))
    return best


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    rows, epochs, batch = int(args["--rows"]), int(args["--epochs"]), int(args["--batch"])
    repeat = int(args["--repeat"])
    sys.path.insert(0, HERE)
    from mnistlike import mnistlike
    from sklearn import __version__ as sk_version
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import minmax_scale
    import cyrbm
    mnist = mnistlike(rows, seed=0).astype(np.float32)
    cases = [] if args["--skip-defaults"] else [
        (f"MNIST-like {rows} x 784 -> 500, scikit-learn's defaults (batch 10, 10 epochs)",
         mnist, 500, 10, 10, 0.1)]
    cases += [
        (f"MNIST-like {rows} x 784 -> 500, batch {batch}, {epochs} epoch(s)",
         mnist, 500, batch, epochs, 0.05),
        ("8x8 digits 1797 x 64 (grey) -> 100, batch 10, 10 epochs",
         minmax_scale(load_digits().data.astype(np.float32)), 100, 10, 10, 0.06),
    ]
    print(f"cyrbm {cyrbm.__version__} ({cyrbm.config()['kernels']}, "
          f"{cyrbm.config()['threads']} threads) against scikit-learn {sk_version}; "
          f"{os.cpu_count()} cores; best of {repeat}")
    print("| case | scikit-learn process (fit) | cyrbm process (fit) | ratio process (fit) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, hidden, b, e, lr in cases:
            path = os.path.join(tmp, "X.npy")
            np.save(path, X)
            sk = timed_process("sklearn", path, hidden, b, e, lr, repeat)
            cy = timed_process("cyrbm", path, hidden, b, e, lr, repeat)
            print(f"| {name} | {sk[0]:.2f} s ({sk[1]:.2f} s) | {cy[0]:.2f} s ({cy[1]:.2f} s) "
                  f"| {sk[0] / cy[0]:.1f}x ({sk[1] / cy[1]:.1f}x) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
