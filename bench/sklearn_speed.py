"""Fit time: cyrbm.sklearn.BernoulliRBM against scikit-learn's BernoulliRBM, same settings.

The issue's case: MNIST-like 60,000 x 784 binary images (bench/mnistlike.py, float32)
-> 500 hidden units with scikit-learn's default settings (PCD-1, batch_size=10, n_iter=10,
learning_rate=0.1, random_state=0), what a user who swaps the import gets.  Each repeat
fits scikit-learn's estimator, then cyrbm's (alternating, so a change of the machine's
load falls on both), each in a fresh Python process that imports the estimator, loads the
data (written once to a temporary .npy) and calls ``fit``; the process's wall time (timed
with time.perf_counter around subprocess.run) is the "whole process" figure, and the fit
call alone is timed inside it.  Printed: each repeat's times and ratio, then the median
of the repeats' ratios (scikit-learn / cyrbm, whole process and fit alone).

``--extra`` adds, after the repeats, two smaller cases (one process each per repeat): the
same data in batches of --batch for --epochs epochs at learning rate 0.05, and
scikit-learn's 8 x 8 digits (min-max scaled grey) -> 100, batch 10, 10 epochs,
learning rate 0.06 (its example's settings).

Usage:
  sklearn_speed.py [options]

Options:
  --rows=N      MNIST-like rows [default: 60000].
  --repeat=R    Repeats, each one scikit-learn process then one cyrbm process [default: 3].
  --extra       Also time the two smaller cases.
  --epochs=E    Epochs of the --extra batch case [default: 1].
  --batch=B     Mini-batch size of the --extra batch case [default: 100].
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


def timed_process(which, path, hidden, batch, epochs, lr):
    """(whole-process seconds, fit seconds) of one fresh process fitting ``which``."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FIT, which, path, str(hidden), str(batch),
                          str(epochs), str(lr)], check=True, capture_output=True, text=True)
    whole = time.perf_counter() - t0
    return whole, float(out.stdout.split()[-1])


def compare(name, path, hidden, batch, epochs, lr, repeat):
    """``repeat`` alternating pairs of processes; prints each and returns the median
    ratios (whole process, fit alone)."""
    ratios = []
    for r in range(repeat):
        sk = timed_process("sklearn", path, hidden, batch, epochs, lr)
        cy = timed_process("cyrbm", path, hidden, batch, epochs, lr)
        ratios.append((sk[0] / cy[0], sk[1] / cy[1]))
        print(f"| {name} | {r + 1} | {sk[0]:.2f} s ({sk[1]:.2f} s) | {cy[0]:.2f} s "
              f"({cy[1]:.2f} s) | {ratios[-1][0]:.2f}x ({ratios[-1][1]:.2f}x) |", flush=True)
    whole, fit = (float(np.median(x)) for x in zip(*ratios))
    print(f"| {name} | median of {repeat} | | | **{whole:.2f}x** ({fit:.2f}x) |", flush=True)
    return whole, fit


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    rows, repeat = int(args["--rows"]), int(args["--repeat"])
    sys.path.insert(0, HERE)
    from mnistlike import mnistlike
    from sklearn import __version__ as sk_version
    import cyrbm
    print(f"cyrbm {cyrbm.__version__} ({cyrbm.config()['kernels']}, "
          f"{cyrbm.config()['threads']} threads) against scikit-learn {sk_version}; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    print("| case | repeat | scikit-learn process (fit) | cyrbm process (fit) "
          "| ratio process (fit) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "X.npy")
        np.save(path, mnistlike(rows, seed=0).astype(np.float32))
        compare(f"{rows} x 784 -> 500, scikit-learn's defaults", path, 500, 10, 10, 0.1,
                repeat)
        if args["--extra"]:
            from sklearn.datasets import load_digits
            from sklearn.preprocessing import minmax_scale
            epochs, batch = int(args["--epochs"]), int(args["--batch"])
            compare(f"{rows} x 784 -> 500, batch {batch}, {epochs} epoch(s)", path, 500,
                    batch, epochs, 0.05, repeat)
            np.save(path, minmax_scale(load_digits().data.astype(np.float32)))
            compare("8x8 digits 1797 x 64 (grey) -> 100", path, 100, 10, 10, 0.06, repeat)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
