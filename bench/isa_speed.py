"""Each kernel variant side by side with NumPy / scikit-learn held to the same instruction set.

For every variant (default: those this build holds and this CPU runs) it runs, in a
fresh process with CYRBM_FORCE_ISA=<variant> and OpenBLAS held to kernels of the same
instruction set (OPENBLAS_CORETYPE: SkylakeX for avx512, Haswell for avx2, Prescott for
sse2; OPENBLAS_L2_SIZE unset):

* bench/ais_speed.py    the paper AIS setting (784 x 500 trained model, 100 runs, 14,500
                        betas) against a plain NumPy AIS and the BLAS floor
* bench/train_speed.py  one CD-1 / PCD-1 epoch (60,000 x 784 -> 500) against
                        scikit-learn's BernoulliRBM

and prints each script's output, then one summary line per variant with the ratios.

Usage:
  isa_speed.py [--isa LIST] [--fraction F] [--repeat N] [--skip-train] [--skip-ais]

Options:
  --isa LIST     Comma-separated variants (default: all this build holds and the CPU runs).
  --fraction F   Share of the paper's betas for the AIS setting [default: 1.0].
  --repeat N     Repeats inside each script [default: 1].
  --skip-train   No training epoch.
  --skip-ais     No AIS.
"""
import os
import re
import subprocess
import sys

from docopt import docopt

from cyrbm import _dispatch

HERE = os.path.dirname(os.path.abspath(__file__))
CORETYPE = {"avx512": "SkylakeX", "avx2": "Haswell", "sse2": "Prescott", "neon": None,
            "generic": None}


def run(script, args, isa):
    env = dict(os.environ, CYRBM_FORCE_ISA=isa)
    env.pop("OPENBLAS_L2_SIZE", None)
    if CORETYPE.get(isa):
        env["OPENBLAS_CORETYPE"] = CORETYPE[isa]
    else:
        env.pop("OPENBLAS_CORETYPE", None)
    cmd = [sys.executable, os.path.join(HERE, script)] + args
    print(f"$ CYRBM_FORCE_ISA={isa} OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', '(unset)')} "
          f"python bench/{script} {' '.join(args)}", flush=True)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(out.stdout + out.stderr, flush=True)
    return out.stdout


def main(argv=None):
    opts = docopt(__doc__, argv=argv)
    isas = opts["--isa"].split(",") if opts["--isa"] else _dispatch.kernels_runnable()
    rep = ["--repeat", opts["--repeat"]]
    summary = []
    for isa in isas:
        line = f"{isa:8s}"
        if not opts["--skip-ais"]:
            out = run("ais_speed.py", ["--fraction", opts["--fraction"]] + rep, isa)
            m = re.search(r"cyrbm :\s+([\d.]+) s best", out)
            f = re.search(r"takes ([\d.]+) / [\d.]+ of the floor", out)
            n = re.search(r"cyrbm vs NumPy\s+:\s+([\d.]+)x", out)
            line += (f"  AIS {m.group(1) if m else '?'} s, {n.group(1) if n else '?'}x NumPy, "
                     f"{f.group(1) if f else '?'} of the floor")
        if not opts["--skip-train"]:
            out = run("train_speed.py", rep, isa)
            c = re.search(r"cyrbm CD-1:\s+([\d.]+) s", out)
            s = re.search(r"CD-1: ([\d.]+)x faster than scikit-learn", out)
            line += (f"  CD-1 epoch {c.group(1) if c else '?'} s, "
                     f"{s.group(1) if s else '?'}x scikit-learn")
        summary.append(line)
    print("summary (each variant against references held to the same instruction set):")
    for line in summary:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
