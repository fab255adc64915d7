"""Whole-process time of `cyrbm train` against the sum of its epoch times (issue 10).

Runs ``cyrbm train DATA -o m.npz --hidden 500 --epochs 2 --json`` (CD-1, batch 100) as a
separate process --repeat times and prints, for each run, the wall time of the whole
process, the epoch times cyrbm reports (``history[*].seconds``), their sum and the ratio
wall / sum (target: at most 1.3), then the median ratio.  DATA defaults to 60,000
MNIST-like 28 x 28 digits (bench/mnistlike.py), made once and cached in bench/.cache/.
With --compare=PYTHON, the same command from another installation (e.g. an older
cyrbm's virtual environment) is run alternately with this one.

Usage:
  train_overhead.py [DATA] [--repeat=R] [--compare=PYTHON]

Options:
  --repeat=R          Runs [default: 5].
  --compare=PYTHON    The python of another cyrbm installation to run alternately.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from docopt import docopt

HERE = os.path.dirname(os.path.abspath(__file__))


def default_data():
    path = os.path.join(HERE, ".cache", "mnistlike60k.npy")
    if not os.path.exists(path):
        import numpy as np
        sys.path.insert(0, HERE)
        from mnistlike import mnistlike
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.save(path, mnistlike(60000, seed=0))
    return path


def run_once(python, data, workdir):
    cmd = [python, "-c", "import sys; from cyrbm.cli import main; sys.exit(main())",
           "train", data, "-o", "m.npz", "--hidden", "500", "--epochs", "2", "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=workdir, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    result = json.loads(out)
    epochs = [h["seconds"] for h in result["history"]]
    return wall, epochs, result.get("threads")


def main():
    args = docopt(__doc__)
    data = os.path.abspath(args["DATA"] or default_data())
    pythons = [("this", sys.executable)]
    if args["--compare"]:
        pythons.append(("other", args["--compare"]))
    ratios = {label: [] for label, _ in pythons}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(int(args["--repeat"])):
            for label, python in pythons:
                wall, epochs, threads = run_once(python, data, workdir)
                ratio = wall / sum(epochs)
                ratios[label].append(ratio)
                print(f"{label:5s} wall {wall:6.3f} s  epochs {', '.join(f'{e:.3f}' for e in epochs)}"
                      f"  sum {sum(epochs):.3f} s  ratio {ratio:.3f}  threads {threads}", flush=True)
    for label, values in ratios.items():
        print(f"{label}: median ratio {statistics.median(values):.3f}, "
              f"range {min(values):.3f}-{max(values):.3f}")


if __name__ == "__main__":
    main()
