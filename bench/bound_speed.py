"""Speed of the DBN variational bound against its dense BLAS floor (issue 12, point 3).

The whole command ``cyrbm bound DBN --data DATA --samples 1 --logz 0 --json`` (run
in-process through ``cyrbm.cli.main``: reading the DBN and the data, checking them, the
bound, the JSON) on a 784-500-2000 DBN with random weights (W ~ N(0, 0.1^2)) and 10,000
MNIST-like binary digits (bench/mnistlike.py), M = 1 sample per vector and ln Z given,
is timed against its dense floor: the same three matrix products in float32 with NumPy's
BLAS at its own threads, (N x 784) @ (784 x 500), (N x 500) @ (500 x 784) and
(N x 500) @ (500 x 2000), and nothing else (cyrbm itself makes these products as binary
products of its 0/1 states, without BLAS).  The two are timed alternately ``--repeat``
times; the ratio of the medians is printed.

``bound_speed.py chib [OPTIONS]`` measures the Chib-style estimator instead (issue 13,
point 3: S = 40 on a 784-500-2000 DBN, vectors per second and the projection to 10,000,
against the same algorithm in NumPy): bench/chib_speed.py with its options.

Usage:
  bound_speed.py [--repeat N] [--vectors N] [--threads T]
  bound_speed.py chib [<chib_speed_options>...]

Options:
  --repeat N   Timings of each, taken alternately [default: 5].
  --vectors N  Data vectors [default: 10000].
  --threads T  cyrbm threads (default: chosen by the work).
"""
import contextlib
import io
import json
import os
import sys
import time

os.environ.pop("OPENBLAS_L2_SIZE", None)      # see bench/isa_speed.py

import numpy as np  # noqa: E402
from docopt import docopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cyrbm  # noqa: E402
from cyrbm import cli  # noqa: E402
from mnistlike import mnistlike  # noqa: E402


def blas_info():
    from threadpoolctl import threadpool_info
    return ", ".join(f"{i.get('internal_api')} {i.get('version')} x{i.get('num_threads')}"
                     for i in threadpool_info() if i.get("user_api") == "blas")


def files(n):
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    data = os.path.join(cache, f"mnistlike{n}.npy")
    if not os.path.exists(data):
        np.save(data, mnistlike(n, seed=1))
    model = os.path.join(cache, "dbn784_500_2000_random.npz")
    if not os.path.exists(model):
        rng = np.random.default_rng(0)
        layers = [cyrbm.RBM(0.1 * rng.standard_normal((784, 500)), rng.normal(-1, 0.5, 784),
                            rng.normal(0, 0.5, 500), dtype=np.float32),
                  cyrbm.RBM(0.1 * rng.standard_normal((500, 2000)), rng.normal(0, 0.5, 500),
                            rng.normal(0, 0.5, 2000), dtype=np.float32)]
        cyrbm.DBN(layers).save(model)
    return data, model


def floor(V, H, W1, W1T, W2):
    np.matmul(V, W1)
    np.matmul(H, W1T)
    np.matmul(H, W2)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["chib"]:
        import chib_speed
        sys.argv = [os.path.join(HERE, "chib_speed.py")] + argv[1:]
        return chib_speed.main()
    opts = docopt(__doc__, argv=argv)
    n, repeat = int(opts["--vectors"]), max(1, int(opts["--repeat"]))
    data, model = files(n)
    argv_cmd = ["bound", model, "--data", data, "--samples", "1", "--logz", "0", "--json"]
    if opts["--threads"]:
        argv_cmd += ["--threads", opts["--threads"]]
    dbn = cyrbm.DBN.load(model)
    rng = np.random.default_rng(2)
    V = np.load(data).astype(np.float32)
    H = (rng.random((n, 500)) < 0.5).astype(np.float32)
    W1, W2 = dbn.layers[0].W, dbn.layers[1].W
    W1T = np.ascontiguousarray(W1.T)
    print(f"cyrbm {cyrbm.__version__}, kernels {cyrbm.config()['kernels']}, BLAS {blas_info()}")
    print(f"command: cyrbm {' '.join(argv_cmd)}")
    t_cmd, t_floor, result = [], [], None
    for _ in range(repeat):
        buf = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf):
            code = cli.main(argv_cmd)
        t_cmd.append(time.perf_counter() - t0)
        assert code == 0
        result = json.loads(buf.getvalue())
        t0 = time.perf_counter()
        floor(V, H, W1, W1T, W2)
        t_floor.append(time.perf_counter() - t0)
    mc, mf = float(np.median(t_cmd)), float(np.median(t_floor))
    print(f"bound mean {result['mean']:.4f} nats over {result['n_data']} vectors, "
          f"threads {result['threads']}")
    print(f"cyrbm bound (whole command): median {mc:.3f} s  (all: "
          f"{', '.join(f'{t:.3f}' for t in t_cmd)})")
    print(f"dense floor (3 products):    median {mf:.3f} s  (all: "
          f"{', '.join(f'{t:.3f}' for t in t_floor)})")
    print(f"ratio cyrbm / floor: {mc / mf:.2f}")


if __name__ == "__main__":
    main()
