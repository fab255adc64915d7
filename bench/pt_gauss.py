"""Parallel tempering of a Gaussian RBM, before and after its engine driver (issue 35).

PT training of a GaussianRBM (CRI10 Table I on its tempered family, beta scaling W and
c) ran each round as one ``_sweeps(beta=)`` call per temperature and the swaps in NumPy
(``TemperedStates`` until the C API's version 7); it now runs the round in one nogil
driver, ``_tempering.gauss_pt_sweeps`` (sweeps on gauss_t.h at every chain's beta, swaps
in C).  This script times one epoch of ``Trainer(visible="gaussian", method="pt")``
three ways in one process, alternately, ``--repeat`` times:

    numpy   TemperedStates.step replaced by the former NumPy round (kept below)
    engine  the package as it is (the driver)
    pcd     method="pcd", for scale

and checks that "numpy" and "engine" train to the same bits.  Best and median seconds;
NumPy's BLAS (the former round's products) is limited to the same threads (threadpoolctl).

Usage:
  pt_gauss.py [--visible D] [--hidden M] [--rows N] [--batch B] [--temps K]
              [--threads T] [--repeat N] [--dtype DT]

Options:
  --visible D   Visible (Gaussian) units [default: 400].
  --hidden M    Hidden units [default: 100].
  --rows N      Training rows (one epoch) [default: 3000].
  --batch B     Mini-batch size (chains per temperature) [default: 100].
  --temps K     Temperatures [default: 11].
  --threads T   Threads [default: 1].
  --repeat N    Timings of each, alternately [default: 3].
  --dtype DT    float32 or float64 [default: float32].
"""
import time

import numpy as np
from docopt import docopt
from threadpoolctl import threadpool_limits

from cyrbm import Trainer, _anneal
from cyrbm.models import tempering


def _softplus_sum(beta, x):
    y = beta * x
    return np.sum(np.maximum(y, 0.0) + np.log1p(np.exp(-np.abs(y))), axis=1)


def numpy_step(self, model, n_threads=None, rounds=1):
    """TemperedStates.step as it was before the driver: per temperature the class's
    _sweeps at beta, then the swaps of states in NumPy (CRI10 Eq. 5)."""
    if n_threads is not None:
        self.n_threads = int(n_threads)
    for _ in range(rounds):
        for k in range(self.K1):
            rows = self.order[:, k]
            v, s = self.v[rows], self.streams[rows]
            model._sweeps(v, s, 1, 2, self.n_threads, beta=float(self.temps[k]))
            self.v[rows], self.streams[rows] = v, s
        if self.K1 < 2:
            continue
        K = self.K1 - 1
        u = _anneal.chain_uniforms(self.swap_streams, K)
        _, e, x = model._tempered_parts(self.v)
        for i, k in enumerate(range(K - 1, -1, -1)):
            lo, hi = self.order[:, k], self.order[:, k + 1]
            b0, b1 = self.temps[k], self.temps[k + 1]
            log_r = ((b0 - b1) * (e[hi] - e[lo]) + _softplus_sum(b0, x[hi])
                     + _softplus_sum(b1, x[lo]) - _softplus_sum(b0, x[lo])
                     - _softplus_sum(b1, x[hi]))
            take = u[:, i] < np.exp(np.minimum(log_r, 0.0))
            a, b = lo[take], hi[take]
            for arr in (self.v, e, x):
                arr[a], arr[b] = arr[b], arr[a]
            self.accepted[:, k] += take


def main():
    args = docopt(__doc__)
    D, M, N = int(args["--visible"]), int(args["--hidden"]), int(args["--rows"])
    B, K, T = int(args["--batch"]), int(args["--temps"]), int(args["--threads"])
    rng = np.random.default_rng(0)
    data = rng.standard_normal((N, D)).astype(args["--dtype"])
    engine_step = tempering.TemperedStates.step

    def fit(method, step=engine_step):
        tempering.TemperedStates.step = step
        try:
            t0 = time.perf_counter()
            model = Trainer(M, method=method, epochs=1, batch_size=B, seed=1, threads=T,
                            dtype=args["--dtype"], monitor_size=0, progress=False,
                            visible="gaussian",
                            **({"temperatures": K} if method == "pt" else {})).fit(data)
            return time.perf_counter() - t0, model
        finally:
            tempering.TemperedStates.step = engine_step

    times = {"numpy": [], "engine": [], "pcd": []}
    limits = threadpool_limits(T)
    for _ in range(int(args["--repeat"])):
        t, old = fit("pt", numpy_step)
        times["numpy"].append(t)
        t, new = fit("pt")
        times["engine"].append(t)
        times["pcd"].append(fit("pcd")[0])
        same = all(np.array_equal(getattr(old, a), getattr(new, a))
                   for a in ("W", "vbias", "hbias", "sigma"))
        assert same, "the engine driver trained to other bits than the NumPy round"
    limits.restore_original_limits()
    print(f"Gaussian RBM {D} x {M}, {N} rows, batch {B}, {K} temperatures, {T} thread(s), "
          f"{args['--dtype']}; the same bits: yes")
    for name, ts in times.items():
        print(f"  {name:7s} best {min(ts):6.2f} s   median {np.median(ts):6.2f} s")
    print(f"  numpy / engine (best): {min(times['numpy']) / min(times['engine']):.2f}")


if __name__ == "__main__":
    main()
