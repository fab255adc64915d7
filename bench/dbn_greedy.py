"""Greedy training improves the bound (issue 12, point 2; SM08 Sec. 4.1 and 5.2).

On 784-dimensional MNIST-like binary digits (bench/mnistlike.py: 10,000 training and
2,000 test images), train a 784-H RBM by CD-1, then a second layer H-784 started as its
transpose (``--init-transpose``: W2 = W1^T, so the DBN's p(v) starts as the RBM's) and
trained on samples of Q(h1 | v).  Report the RBM's average test log-probability (AIS,
100 runs, the paper's 14,500 betas) with its 3-sigma lower end, and the DBN's test
variational bound (SM08 Eq. 24; M samples of Q, ln Z of the top RBM by AIS with the same
settings) with its Monte Carlo and AIS errors apart, as SM08 Table 2 does.

Usage:
  dbn_greedy.py [--hidden H] [--epochs E] [--epochs2 E2] [--lr2 LR] [--samples M] [--seed S]

Options:
  --hidden H    Hidden units of the first layer [default: 100].
  --epochs E    CD-1 epochs of the RBM [default: 10].
  --epochs2 E2  CD-1 epochs of the second layer [default: 10].
  --lr2 LR      Learning rate of the second layer [default: 0.01].
  --samples M   Samples of Q per test vector [default: 5].
  --seed S      Seed [default: 0].
"""
import os
import sys
import time

os.environ.pop("OPENBLAS_L2_SIZE", None)

import numpy as np  # noqa: E402
from docopt import docopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cyrbm  # noqa: E402
from cyrbm.training.greedy import train_dbn  # noqa: E402
from mnistlike import mnistlike  # noqa: E402


def main(argv=None):
    o = docopt(__doc__, argv=argv)
    H, E, E2 = int(o["--hidden"]), int(o["--epochs"]), int(o["--epochs2"])
    M, seed, lr2 = int(o["--samples"]), int(o["--seed"]), float(o["--lr2"])
    X = mnistlike(12000, seed=seed)
    train, test = X[:10000], X[10000:]
    t0 = time.perf_counter()
    dbn = train_dbn(train, [H, 784], init_transpose=True, seed=seed, monitor_size=0,
                    progress=False, trainers=[{"epochs": E, "learning_rate": 0.05},
                                              {"epochs": E2, "learning_rate": lr2}])
    print(f"trained 784-{H}-784 greedily (CD-1, {E} + {E2} epochs) in "
          f"{time.perf_counter() - t0:.1f} s")
    rbm = dbn.layers[0]
    ann = cyrbm.Annealer(runs=100, schedule="paper", seed=seed, progress=False)
    r1 = ann.log_partition(rbm, base_rate="data", data=test, base_data=train)
    lo3 = r1.avg_log_prob_interval(3)[0]
    print(f"RBM 784-{H}: test log-prob (AIS) {r1.avg_log_prob:.4f}, ln Z {r1.log_Z:.4f}, "
          f"3-sigma interval [{lo3:.4f}, {r1.avg_log_prob_interval(3)[1]:.4f}]")
    est = cyrbm.BoundEstimator(dbn, annealer=cyrbm.Annealer(runs=100, schedule="paper",
                                                            seed=seed, progress=False),
                               seed=seed)
    for entropy in ("analytic", "sampled"):
        b = est.variational(test, samples=M, entropy=entropy)
        s = b.ais_interval(3)
        print(f"DBN 784-{H}-784 test bound ({entropy} entropy, M={M}): {b.mean:.4f}  "
              f"MC +-3 std {3 * b.stderr:.4f}  AIS ln(Z+-3s)-ln Z shift "
              f"[{s[0]:+.4f}, {s[1]:+.4f}]  ln Z {b.log_Z:.4f}")
        print(f"  bound - (RBM AIS - 3 sigma) = {b.mean - lo3:+.4f}  -> "
              f"{'holds' if b.mean >= lo3 else 'does NOT hold'}")
    # the untrained second layer (W2 = W1^T) for reference: the bound starts at the RBM
    tied = cyrbm.DBN([rbm, rbm.transposed()])
    b0 = cyrbm.BoundEstimator(tied, log_Z=r1.log_Z, seed=seed).variational(
        test, samples=M, entropy="sampled")
    print(f"DBN with W2 = W1^T (before training layer 2), ln Z = the RBM's AIS ln Z: "
          f"{b0.mean:.4f} (the RBM's AIS estimate: {r1.avg_log_prob:.4f})")


if __name__ == "__main__":
    main()
