"""Why PT's tracker of ln Z drifts (issue 36, point 2): every source of the Kalman filter
(cyrbm.training.pt_tracking, DCB11) taken apart on one PT training run.

Trains ``cyrbm.Trainer(H, method="pt", epochs=E, batch_size=B, chains=M,
temperatures=K, learning_rate=lr, monitor_size=0, progress=False, seed=0,
track_logz="filter")`` and, before each round (the tracker's hook, run unchanged), with
the ladders' states S_n (drawn at theta_n by the last round) records:

* the bridges at fixed theta_n: BAR between neighbouring temperatures (their overlap,
  the one-sided effective sample size of each direction), and their chain from the
  anchor at beta = 0, an estimate of ln Z(theta_n) that carries no error from earlier
  updates ("bridges alone");
* the update theta_n -> theta_{n+1} at every temperature k, one-sided (DCB11 Eq. 5:
  ln mean exp(ln p*_{n+1,k} - ln p*_{n,k}) over S_n, the tracker's transition), with
  the weights' effective sample size;
* the same update from S_{n+1} alone (reverse importance sampling, -ln mean exp(ln
  p*_{n,k} - ln p*_{n+1,k}): draws that did not make the update);
* the same update two-sided: Bennett's acceptance ratio with S_n (drawn at theta_n) and
  S_{n+1} (drawn at theta_{n+1} by the next round), with its overlap.

At the end of each epoch it prints ln Z by the filter, by the bridges alone, by the
one-sided and two-sided updates summed from the first bridge estimate, and a reference:
exact (``model.log_partition()``) when the hidden layer has at most 24 units, else a
fresh AIS (``--ais`` runs of ``--betas`` linear betas from the data's base rate).  With
``--per-k`` it also prints, at the last epoch, ln Z_k of the paths against the bridges
at every temperature.

Usage:
  pt_track_diag.py [DATA] [options]

Arguments:
  DATA                "mnistlike" (bench/mnistlike.py; the default) or a data file for
                      cyrbm.load_data, binarized stochastically (seed 0) as the digits are,
                      its first --rows rows; Fashion-MNIST from Debian's
                      dataset-fashion-mnist: /usr/share/datasets/fashion-mnist/
                      train-images-idx3-ubyte.gz.

Options:
  --rows=N            Training rows of bench/mnistlike.py [default: 10000].
  --hidden=H          Hidden units [default: 500].
  --batch=B           Mini-batch size [default: 100].
  --chains=M          PT ladders [default: 100].
  --temperatures=K    PT temperatures [default: 21].
  --epochs=E          Epochs [default: 5].
  --lr=X              Learning rate [default: 0.01].
  --ais=R             Fresh AIS runs at each epoch's end (0: none) [default: 100].
  --betas=N           Betas of the fresh AIS [default: 14500].
  --threads=T         cyrbm threads [default: 1].
  --per-k             Print every temperature's paths at the last epoch.
  --equilibrate=R     Also run R more PT rounds at each epoch's model, from the
                      training ladders' states there, and take the bridges again
                      (whether the states, not the estimators, are off) [default: 0].
  --rounds=R          PT rounds per update in training (cyrbm's PT takes 1; the others
                      are the bench's own, to see whether the tracker holds when the
                      ladders follow the model) [default: 1].
  --cost=N            Then time, alternately N times at the last model, one PT round
                      and the tracker's parts (processor time, median and best)
                      [default: 0].
  -h --help           Show this text.
"""
import os
import sys

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm.training import pt_tracking
from cyrbm.training.pt_tracking import bennett_pairs, importance_log_ratio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # mnistlike


class Diagnosis:
    """What each of the filter's sources says, update by update (see the module)."""

    def __init__(self):
        self.prev_model = None      # theta_n of the states the next call sees
        self.prev_fwd = None        # K1 x M: ln p*_{n+1,k} - ln p*_{n,k} at S_n
        self.prev_x = None
        self.bridge, self.bridge_se, self.overlap, self.ess_pair = {}, {}, {}, {}
        self.d1, self.ess1, self.d2, self.ov2, self.dr = {}, {}, {}, {}, {}

    def bridges(self, model, x, temps, n):
        K1 = temps.size
        M = x.shape[0] // K1
        k = np.repeat(np.arange(K1), M)
        betas = np.stack([temps[np.maximum(k - 1, 0)], temps[k],
                          temps[np.minimum(k + 1, K1 - 1)]], axis=1)
        lp = model._tempered_log_p(x, betas)
        wf = (lp[:, 2] - lp[:, 1]).reshape(K1, M)[:-1]
        wr = (lp[:, 0] - lp[:, 1]).reshape(K1, M)[1:]
        y, overlap, psi = bennett_pairs(wf, wr)
        z = model._tempered_base_log_partition() + np.concatenate([[0.0], np.cumsum(y)])
        e = np.cumsum(psi, axis=1)[:, -1]          # each ladder's influence on ln Z_K
        self.bridge[n] = z
        self.bridge_se[n] = float(np.sqrt(np.dot(e, e) / (M * M)))
        self.overlap[n] = overlap
        self.ess_pair[n] = np.array([min(importance_log_ratio(wf[j])[2],
                                         importance_log_ratio(wr[j])[2]) for j in range(K1 - 1)])
        return lp

    def __call__(self, model, ladders, n):
        """Before the round after n updates: the states are S_{n-1}, drawn at theta_{n-1}
        (self.prev_model); ``model`` is theta_n."""
        if n == 0 or self.prev_model is None:
            self.prev_model = model.copy()
            return
        temps = np.asarray(ladders.temps, np.float64)
        K1 = temps.size
        x = np.ascontiguousarray(ladders.tempered_states())
        M = x.shape[0] // K1
        k = np.repeat(np.arange(K1), M)
        old = self.bridges(self.prev_model, x, temps, n - 1)[:, 1]     # ln p*_{n-1,k}(S_{n-1})
        new = model._tempered_log_p(x, temps[k][:, None])[:, 0]          # ln p*_{n,k}(S_{n-1})
        fwd = (new - old).reshape(K1, M)
        self.d1[n - 1] = np.array([importance_log_ratio(fwd[i])[0] for i in range(K1)])
        self.ess1[n - 1] = np.array([importance_log_ratio(fwd[i])[2] for i in range(K1)])
        if self.prev_fwd is not None:
            # theta_{n-2} -> theta_{n-1}: S_{n-2} forward, S_{n-1} reverse
            before = self.prev_prev._tempered_log_p(x, temps[k][:, None])[:, 0]
            rev = (before - old).reshape(K1, M)
            d, ov, psi = bennett_pairs(self.prev_fwd[1:], rev[1:])
            self.d2[n - 2] = np.concatenate([[self.d1[n - 2][0]], d])
            self.ov2[n - 2] = np.concatenate([[1.0], ov])
            self.dr[n - 2] = -np.array([importance_log_ratio(rev[i])[0] for i in range(K1)])
        self.prev_fwd, self.prev_prev = fwd, self.prev_model
        self.prev_model = model.copy()


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    H, E = int(args["--hidden"]), int(args["--epochs"])
    if args["DATA"] in (None, "mnistlike"):
        from mnistlike import mnistlike
        X, source = mnistlike(int(args["--rows"]), seed=0), "MNIST-like digits"
    else:
        try:
            X = cyrbm.load_data(args["DATA"], binarize="stochastic", seed=0)
        except cyrbm.errors.DataError as e:
            raise SystemExit(str(e))
        X = X[:int(args["--rows"])]
        source = args["DATA"]
    threads = int(args["--threads"])
    diag = Diagnosis()
    hook = pt_tracking.PTLogZTracker.before_round

    def before_round(self, model, ladders, n_updates, threads=None):
        diag(model, ladders, n_updates)
        return hook(self, model, ladders, n_updates, threads)

    pt_tracking.PTLogZTracker.before_round = before_round
    rounds = int(args["--rounds"])
    if rounds > 1:
        from cyrbm.models.tempering import TemperedChains
        one_round = TemperedChains.step

        def more_rounds(self, model, n_threads=None):
            for _ in range(rounds):
                one_round(self, model, n_threads=n_threads)
        TemperedChains.step = more_rounds
    t = cyrbm.Trainer(H, method="pt", epochs=E, batch_size=int(args["--batch"]),
                      chains=int(args["--chains"]), temperatures=int(args["--temperatures"]),
                      learning_rate=float(args["--lr"]), monitor_size=0, progress=False,
                      seed=0, threads=threads, track_logz="filter")
    models, states = [], []

    def keep(record):
        models.append(t.model.copy())
        states.append(np.array(pt_tracking_ladders().tempered_states()))
    t.callback = keep
    t.fit(X)
    if rounds > 1:
        TemperedChains.step = one_round
    # the last round's states (of the model before the last update), then one more
    # round at the last model: the last update one- and two-sided, the last bridges
    ladders = pt_tracking_ladders()
    n_last = max(diag.d1) + 2
    diag(t.model, ladders, n_last)
    ladders.step(t.model, n_threads=threads)
    diag(t.model, ladders, n_last + 1)
    print(f"{X.shape[0]} x {X.shape[1]} {source}, {H} hidden, PT {args['--chains']} "
          f"ladders x {args['--temperatures']} temperatures, batch {args['--batch']}, "
          f"lr {args['--lr']}, {E} epochs, {rounds} round(s) per update; cyrbm {cyrbm.__version__}")
    per_epoch = n_last // E
    start = diag.bridge[0][-1]
    c1 = np.cumsum([diag.d1[i] for i in range(n_last)], axis=0)
    n2 = max(diag.d2) + 1
    c2 = np.cumsum([diag.d2[i] for i in range(n2)], axis=0)
    cr = np.cumsum([diag.dr[i] for i in range(n2)], axis=0)
    print("epoch | reference | filter (se) | bridges alone (se) | one-sided path | "
          "two-sided path | reverse path | update ESS at K, median / min | update ESS, all k, min | "
          "two-sided overlap at K, min | bridge overlap, min | bridge one-sided ESS, min"
          + (f" | bridges after {args['--equilibrate']} more rounds (se)"
             if int(args["--equilibrate"]) else ""))
    for e, (rec, m) in enumerate(zip(t.history, models), start=1):
        n = e * per_epoch
        if H <= 24:
            ref, ref_se = m.log_partition(), 0.0
        elif not int(args["--ais"]):
            ref = ref_se = float("nan")
        else:
            ann = cyrbm.Annealer(int(args["--ais"]), f"linear:{int(args['--betas'])}", seed=1,
                                 threads=threads, progress=False)
            res = ann.log_partition(m, data=X)
            ref, ref_se = res.log_Z, float(np.exp(res.log_sigma - res.log_Z))
        lo = (e - 1) * per_epoch
        ess_K = np.array([diag.ess1[i][-1] for i in range(lo, n)])
        ess_all = min(diag.ess1[i].min() for i in range(lo, n))
        ov2 = min(diag.ov2[i][-1] for i in range(lo, min(n, n2)))
        bov = min(diag.overlap[i].min() for i in range(lo, n))
        bess = min(diag.ess_pair[i].min() for i in range(lo, n))
        two = start + c2[n - 1][-1] if n <= n2 else float("nan")
        rev = start + cr[n - 1][-1] if n <= n2 else float("nan")
        print(f"{e} | {ref:.3f} ({ref_se:.3f}) | {rec['log_Z']:.3f} ({rec['log_Z_se']:.3f}) | "
              f"{diag.bridge[n][-1]:.3f} ({diag.bridge_se[n]:.3f}) | "
              f"{start + c1[n - 1][-1]:.3f} | {two:.3f} | {rev:.3f} | "
              f"{np.median(ess_K):.3f} / {ess_K.min():.3f} | {ess_all:.3f} | {ov2:.3f} | "
              f"{bov:.3f} | {bess:.3f}" + equilibrated(m, states[e - 1], ladders.temps,
                                                      int(args["--equilibrate"]), threads),
              flush=True)
    if args["--per-k"]:
        n = E * per_epoch
        temps = np.asarray(ladders.temps)
        print("k | beta | bridges | one-sided path - bridges | two-sided path - bridges | "
              "reverse path - bridges")
        for k in range(temps.size):
            two = (diag.bridge[0][k] + c2[n - 1][k] - diag.bridge[n][k]) if n <= n2 else np.nan
            rev = (diag.bridge[0][k] + cr[n - 1][k] - diag.bridge[n][k]) if n <= n2 else np.nan
            print(f"{k} | {temps[k]:.3f} | {diag.bridge[n][k]:.3f} | "
                  f"{diag.bridge[0][k] + c1[n - 1][k] - diag.bridge[n][k]:+.3f} | {two:+.3f} | "
                  f"{rev:+.3f}")
    if int(args["--cost"]):
        cost(t.model, ladders, int(args["--cost"]), threads)


def equilibrated(model, x, temps, rounds, threads):
    """The bridges' ln Z (se) at ``model`` after ``rounds`` more PT rounds from the
    ladders' states ``x`` (grouped by temperature) at fixed parameters."""
    if not rounds:
        return ""
    from cyrbm.models.tempering import TemperedChains
    temps = np.asarray(temps, np.float64)
    K1 = temps.size
    M = x.shape[0] // K1
    runs = x.reshape(K1, M, -1).transpose(1, 0, 2).reshape(M * K1, -1)   # run m K1 + k
    chains = TemperedChains(temps, model.n_visible, model.n_hidden, M, n_threads=threads,
                            seed=7, init=runs)
    for _ in range(rounds):
        chains.step(model, n_threads=threads)
    d = Diagnosis()
    d.bridges(model, np.ascontiguousarray(chains.tempered_states()), temps, 0)
    return f" | {d.bridge[0][-1]:.3f} ({d.bridge_se[0]:.3f})"


def cost(model, ladders, n, threads):
    """Processor seconds of one PT round against the parts of the tracker's work on the
    same states, alternately ``n`` times (median, best)."""
    import time
    temps = np.asarray(ladders.temps, np.float64)
    K1 = temps.size
    x = np.ascontiguousarray(ladders.tempered_states())
    M = x.shape[0] // K1
    k = np.repeat(np.arange(K1), M)
    three = np.stack([temps[np.maximum(k - 1, 0)], temps[k],
                      temps[np.minimum(k + 1, K1 - 1)]], axis=1)
    u = np.asarray(x, np.float32) @ model.W
    top = np.ascontiguousarray(x[-M:])
    parts = {
        "PT round (ladders.step)": lambda: ladders.step(model, n_threads=threads),
        "W^T v of all states (float32 GEMM)": lambda: np.asarray(x, np.float32) @ model.W,
        "W^T v of the top temperature's states": lambda: np.asarray(top, np.float32) @ model.W,
        "one softplus sum over all states (NumPy)": lambda: np.sum(
            np.maximum(u, 0) + np.log1p(np.exp(-np.abs(u))), axis=1, dtype=np.float64),
        "ln p* of all states at 1 beta (_tempered_log_p)": lambda: model._tempered_log_p(
            x, temps[k][:, None]),
        "ln p* of all states at 3 betas": lambda: model._tempered_log_p(x, three),
    }
    times = {name: [] for name in parts}
    for _ in range(n):
        for name, f in parts.items():
            c = time.process_time()
            f()
            times[name].append(time.process_time() - c)
    print(f"processor ms per call, {n} alternating calls ({M} ladders x {K1} "
          f"temperatures, {model.n_visible} x {model.n_hidden}): median / best")
    for name, ts in times.items():
        print(f"  {name}: {1e3 * np.median(ts):.2f} / {1e3 * min(ts):.2f}")


def pt_tracking_ladders():
    """The PT sampler's ladders, as the tracker met them."""
    for obj in _trackers:
        return obj._ladders
    raise RuntimeError("no PT tracker ran")


_trackers = []
_init = pt_tracking.PTLogZTracker.__init__


def _keep(self, *a, **k):
    _init(self, *a, **k)
    _trackers.append(self)


pt_tracking.PTLogZTracker.__init__ = _keep

if __name__ == "__main__":
    main()
