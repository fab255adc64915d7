"""AIS against exact ln Z on RBMs small enough to sum (SM08 Sec. 5.1, Table 1).

Trains 784 x H RBMs (CD1 and CD3; H = 20 and 25 by default) on MNIST-like 28x28 digits
(bench/mnistlike.py: upsampled, jittered, stroke-thickened bundled 8x8 digits, binarized
stochastically), computes ln Z exactly (2^H terms) and by AIS with 100 runs and the
paper's 14,500 betas from the data base rate, and prints the error in nats, the
3-sigma interval and the average test log-probability both ways.  Also one ratio
ln(Z_B / Z_A) between models with 20 and 25 hidden units against its exact value.

Usage:
  ais_accuracy.py [--hidden LIST] [--runs R] [--threads T] [--train N] [--epochs E]

Options:
  --hidden LIST   Comma-separated hidden sizes [default: 20,25].
  --runs R        AIS runs [default: 100].
  --threads T     cyrbm threads (default: all cores).
  --train N       Training images [default: 5000].
  --epochs E      Training epochs [default: 10].
"""
from types import SimpleNamespace

from docopt import docopt
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mnistlike import mnistlike  # noqa: E402

from cyrbm import Trainer  # noqa: E402
from cyrbm.estimators.annealing import Annealer, exact_log_partition  # noqa: E402


def main(argv=None):
    o = docopt(__doc__, argv=argv)
    args = SimpleNamespace(hidden=[int(h) for h in o["--hidden"].split(",")],
                           runs=int(o["--runs"]),
                           threads=None if o["--threads"] is None else int(o["--threads"]),
                           train=int(o["--train"]), epochs=int(o["--epochs"]))
    X = mnistlike(args.train + 1000, seed=0)
    train, test = X[:args.train], X[args.train:]
    print(f"data: {train.shape[0]} training and {test.shape[0]} test MNIST-like images, "
          f"{X.mean():.3f} of pixels on")
    models = {}
    for H in args.hidden:
        for k in (1, 3):
            t0 = time.perf_counter()
            m = Trainer(H, method="cd", k=k, epochs=args.epochs, batch_size=100,
                        learning_rate=0.05, momentum=0.9, weight_decay=2e-4, seed=0,
                        progress=False, monitor_size=0).fit(train)
            t_train = time.perf_counter() - t0
            t0 = time.perf_counter()
            exact = exact_log_partition(m, threads=args.threads)
            t_exact = time.perf_counter() - t0
            res = Annealer(runs=args.runs, schedule="paper", seed=0, threads=args.threads,
                           progress=False).log_partition(m, base_rate="data", data=test,
                                                         base_data=train)
            lo1, hi1 = res.log_Z_interval(1)
            lo3, hi3 = res.log_Z_interval(3)
            true_lp = float(np.mean(m.log_unnormalized(test))) - exact
            name = f"CD{k}({H})"
            models[name] = (m, exact)
            print(f"{name:9s} exact ln Z {exact:9.3f} ({t_exact:.2f} s) | AIS {res.log_Z:9.3f} "
                  f"error {res.log_Z - exact:+.3f} nats, +-sigma ({lo1:.3f}, {hi1:.3f}), "
                  f"+-3sigma ({lo3:.3f}, {hi3:.3f}), ESS {res.ess:5.1f}, {res.seconds:.2f} s | "
                  f"test log-prob true {true_lp:.3f} AIS {res.avg_log_prob:.3f} "
                  f"(train {t_train:.0f} s)", flush=True)
    if 20 in args.hidden and 25 in args.hidden:
        # SM08 Sec. 5.1: 100 runs, 10,000 uniform betas, starting states from CD1(20) by
        # Gibbs sampling (chains started at test images).  A short burn-in leaves the
        # chains near the data, not at the model's equilibrium: a visible bias.
        (A, za), (B, zb) = models["CD1(20)"], models["CD1(25)"]
        # ... and from exact draws of CD1(20) (its 20 hidden units can be enumerated):
        # no burn-in, independent starting states
        for start, burn_in in (("gibbs", 1000), ("gibbs", 20000), ("exact", None)):
            res = Annealer(runs=args.runs, schedule="linear:10000", seed=0,
                           threads=args.threads).log_ratio(
                A, B, data=test, start=start, burn_in=burn_in, log_Z_a=za)
            lo3, hi3 = res.log_ratio_interval(3)
            how = f"burn-in {burn_in:5d}" if burn_in else "exact starts  "
            print(f"ratio ln(Z_CD1(25) / Z_CD1(20)), {how}: exact {zb - za:.3f}, "
                  f"AIS {res.log_ratio:.3f} (+-3sigma {lo3:.3f}, {hi3:.3f}), "
                  f"error {res.log_ratio - (zb - za):+.3f} nats, ESS {res.ess:.1f}, "
                  f"{res.seconds:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
