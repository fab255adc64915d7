"""cyrbm on a Dask cluster: local runs against a LocalCluster of 1 and of 2 worker processes.

Three workloads of the issue (each checked bit for bit against the local run):

* AIS on a 784 x 500 RBM: 100 runs, the paper's 14,500 betas (SM08 Sec. 5.1);
* the Chib-style estimator (MS09, S = 40) on ``--vectors`` test vectors of a 784-500-2000
  DBN (default 10,000);
* a sweep of 8 small models (64 x 8..36 on the bundled digits, CD-1, 20 epochs; each
  measured by AIS, 100 runs of 2,000 betas).

The reference in the same run is the local call on all cores (OpenMP; ``threads`` set to
the usable cores, not chosen by the load, which other jobs would lower).  A cluster of one
worker has one process with as many threads as cores (each task one core); two workers
have one thread each.  Both use the same cores as the local run: on one 2-core machine
the cluster can only add overhead (scheduling, serialization, a task's fixed costs), and
that overhead is what this reports (target: at most 10% at 2 workers).  The cluster's
start-up is reported apart; it is paid once per session.

Models: ``--cache`` (bench/.cache of ais_speed.py and chib_speed.py), else random
weights of the same sizes (the timings hardly depend on the weights).

Usage:
  distributed.py [--vectors N] [--repeat K] [--only WHAT] [--cache DIR]

Options:
  --vectors N    Test vectors of the Chib-style estimator [default: 10000].
  --repeat K     Rounds of local, 1 worker, 2 workers in turn (best reported) [default: 2].
  --only WHAT    ais, chib or sweep (default: all three).
  --cache DIR    Cached models (default: .cache beside this script, wherever it is run
                 from).
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)     # this VM's 512 slows OpenBLAS sgemm ~10x
import sys
import time

import numpy as np
from docopt import docopt

# this script's folder comes first on sys.path, and its name would hide dask's package
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
import distributed  # noqa: E402
sys.path.insert(0, _HERE)
from chib_speed import load_dbn  # noqa: E402
from mnistlike import mnistlike  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm.estimators.chib import chib_log_prob  # noqa: E402
from cyrbm.sweep import sweep  # noqa: E402


def rbm_784x500(cache):
    path = os.path.join(cache, "rbm784x500_cd1.npz")
    if os.path.exists(path):
        return cyrbm.RBM.load(path), "trained (CD1, ais_speed.py)"
    return cyrbm.RBM.random(784, 500, seed=0, scale=0.05), "random weights"


def main():
    args = docopt(__doc__)
    repeat = int(args["--repeat"])
    cache = args["--cache"] or os.path.join(_HERE, ".cache")
    only = args["--only"]
    work = {}
    cores = len(os.sched_getaffinity(0))
    if only in (None, "ais"):
        model, how = rbm_784x500(cache)
        data = mnistlike(2000, seed=1)
        ann = cyrbm.Annealer(runs=100, schedule="paper", seed=0, progress=False,
                             threads=cores)
        work["AIS 784x500, 100 runs x 14,500 betas"] = (
            100, "runs", how,
            lambda c: ann.log_partition(model, base_rate="data", data=data, client=c),
            lambda r: r.log_weights)
    if only in (None, "chib"):
        layers, how = load_dbn(os.path.join(cache, "dbn_784_500_2000_t"))
        n = int(args["--vectors"])
        V = mnistlike(n, seed=2)
        work[f"Chib-style estimator, {n} vectors, S = 40"] = (
            n, "vectors", how,
            lambda c: chib_log_prob(layers, V, 600.0, steps=40, seed=0, client=c,
                                    threads=cores),
            lambda r: r.samples)
    if only in (None, "sweep"):
        X = cyrbm.load_data("digits:train")
        T = cyrbm.load_data("digits:test")
        grid = {"n_hidden": [8, 12, 16, 20, 24, 28, 32, 36]}
        work["sweep of 8 models (64 x 8..36, 20 epochs, AIS 100 x 2,000)"] = (
            8, "models", "trained here",
            lambda c: sweep(X, T, grid, fixed={"epochs": 20, "learning_rate": 0.1}, seed=0,
                            runs=100, schedule="linear:2000", client=c),
            lambda r: np.array([row["avg_log_prob"] for row in r["rows"]]))
    clusters = {}
    try:
        for workers in (1, 2):
            t0 = time.perf_counter()
            cluster = distributed.LocalCluster(n_workers=workers, processes=True,
                                               threads_per_worker=max(1, cores // workers),
                                               dashboard_address=None, silence_logs=40)
            clusters[workers] = (cluster, distributed.Client(cluster))
            print(f"cluster of {workers} worker(s): started in "
                  f"{time.perf_counter() - t0:.2f} s", flush=True)
        rows = []
        for name, (n, unit, how, fn, bits) in work.items():
            # local, 1 worker, 2 workers in turn, ``repeat`` times: the machine's load
            # drifts, and each gets the same share of it
            times = {0: [], 1: [], 2: []}
            results = {}
            for _ in range(repeat):
                for workers in (0, 1, 2):
                    client = clusters[workers][1] if workers else None
                    t0 = time.perf_counter()
                    results[workers] = fn(client)
                    times[workers].append(time.perf_counter() - t0)
                    print(f"  {name}, {workers or 'local'}: {times[workers][-1]:.2f} s",
                          flush=True)
            base = min(times[0])
            for workers in (1, 2):
                same = np.array_equal(bits(results[workers]), bits(results[0]))
                rows.append((name, workers, min(times[workers]), base, n, unit, same))
            print(f"{name}: {how}", flush=True)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
    print()
    print("| workload | workers | seconds | local | overhead | throughput | same bits |")
    print("|---|---|---|---|---|---|---|")
    for name, workers, seconds, base, n, unit, same in rows:
        print(f"| {name} | {workers} | {seconds:.2f} | {base:.2f} | "
              f"{100 * (seconds / base - 1):+.1f}% | {n / seconds:.1f} {unit}/s | "
              f"{'yes' if same else 'NO'} |")
    if not all(r[-1] for r in rows):
        sys.exit("a cluster run did not give the local run's bits")


if __name__ == "__main__":
    main()
