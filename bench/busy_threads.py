"""Default threads on a busy machine (issue 10, row 7).

Starts BUSY programs that keep a core each busy (plain Python loops), then times, each
the best of --repeat runs:

* ``cyrbm train digits:train -o m.npz --hidden 25 --epochs 10 --no-progress`` as a whole
  process, with the default threads and with ``--threads 1`` (and ``--threads T`` for
  T = all cores, once with cyrbm's short OpenMP spin and once with GNU OpenMP's default
  spin of 300,000 rounds, GOMP_SPINCOUNT=300000, what cyrbm did before);
* ``RBM.sample(1000, steps=1000)`` of the trained 64 x 25 model, and
  ``RBM.sample(100, steps=20)`` of a 784 x 500 model, the same ways (in a subprocess each,
  since OpenMP reads its settings once).

Usage:
  busy_threads.py [--busy=N] [--repeat=R]

Options:
  --busy=N      Busy programs to start [default: 2].
  --repeat=R    Runs of each measurement; the minimum is reported [default: 3].
"""
import os
import subprocess
import sys
import tempfile
import time

from docopt import docopt

SAMPLE = """
import sys, time, numpy as np, cyrbm
model = cyrbm.RBM.load(sys.argv[1])
n, steps = int(sys.argv[2]), int(sys.argv[3])
threads = None if sys.argv[4] == "default" else int(sys.argv[4])
t0 = time.perf_counter()
model.sample(n, steps=steps, seed=1, threads=threads)
print(time.perf_counter() - t0)
"""


def cyrbm_exe():
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "cyrbm.cli"]


def env_with(spin):
    env = dict(os.environ)
    for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"):
        env.pop(key, None)
    if spin is not None:
        env["GOMP_SPINCOUNT"] = str(spin)
    return env


def best(repeat, fn):
    return min(fn() for _ in range(repeat))


def time_train(workdir, threads, spin, repeat):
    args = cyrbm_exe() + ["train", "digits:train", "-o", "m.npz", "--hidden", "25", "--epochs",
                          "10", "--no-progress"]
    if threads is not None:
        args += ["--threads", str(threads)]

    def once():
        t0 = time.perf_counter()
        subprocess.run(args, cwd=workdir, env=env_with(spin), check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0
    return best(repeat, once)


def time_sample(model, n, steps, threads, spin, repeat):
    def once():
        out = subprocess.run([sys.executable, "-c", SAMPLE, model, str(n), str(steps),
                              "default" if threads is None else str(threads)],
                             env=env_with(spin), check=True, capture_output=True, text=True,
                             cwd=os.path.dirname(model))
        return float(out.stdout)
    return best(repeat, once)


def main():
    args = docopt(__doc__)
    busy, repeat = int(args["--busy"]), int(args["--repeat"])
    import cyrbm
    cores = cyrbm.config()["threads"]
    workdir = tempfile.mkdtemp()
    subprocess.run(cyrbm_exe() + ["train", "digits:train", "-o", "m.npz", "--hidden", "25",
                                  "--epochs", "10", "--no-progress"], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    import numpy as np
    rng = np.random.default_rng(0)
    big = os.path.join(workdir, "big.npz")
    cyrbm.RBM(rng.normal(0, 0.05, (784, 500)), rng.normal(-2, 0.5, 784), np.zeros(500),
              dtype=np.float32).save(big)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(0.5)
        print(f"{busy} busy programs on {os.cpu_count()} cores; best of {repeat}")
        ways = [("default threads", None, None), ("--threads 1", 1, None),
                (f"--threads {cores}, cyrbm's spin", cores, None),
                (f"--threads {cores}, GOMP_SPINCOUNT=300000 (before)", cores, 300000)]
        rows = [("cyrbm train digits:train --hidden 25 --epochs 10 (whole process)",
                 lambda t, s: time_train(workdir, t, s, repeat)),
                ("RBM.sample(1000, steps=1000), 64 x 25",
                 lambda t, s: time_sample(os.path.join(workdir, "m.npz"), 1000, 1000, t, s, repeat)),
                ("RBM.sample(100, steps=20), 784 x 500",
                 lambda t, s: time_sample(big, 100, 20, t, s, repeat))]
        for title, fn in rows:
            print(title)
            times = {}
            for label, threads, spin in ways:
                times[label] = fn(threads, spin)
            one = times["--threads 1"]
            for label, value in times.items():
                print(f"  {label:45s} {value:7.3f} s  ({value / one:.2f}x --threads 1)")
    finally:
        for h in hogs:
            h.kill()
            h.wait()


if __name__ == "__main__":
    main()
