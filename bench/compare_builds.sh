#!/usr/bin/env bash
# The speed benches of two builds of cyrbm in one run, alternately, so that the machine's
# drift falls on both: binary AIS (ais_speed.py: the paper's schedule on a 784 x 500 RBM,
# against the dense floor), a binary CD-1 epoch (train_speed.py: 60,000 x 784 -> 500),
# and a Gaussian RBM's CD-1 epoch and AIS (gaussian_speed.py, one and two threads,
# against NumPy and the floor).  Each line of output names the build it came from.
#
#   bash bench/compare_builds.sh OLD/bin/python NEW/bin/python [ROUNDS]
#
# Each PYTHON is an environment with one build of cyrbm installed (pip install .);
# run it from the repository root of either build (the benches are the same scripts).
set -euo pipefail
old="$1"; new="$2"; rounds="${3:-2}"
cd "$(dirname "$0")/.."
for round in $(seq "$rounds"); do
    for build in old new; do
        py="$old"; [ "$build" = new ] && py="$new"
        echo "=== round $round, $build build ($py)"
        "$py" bench/ais_speed.py --repeat 3 --skip-numpy --threads 1 | sed "s/^/[$build] /"
        "$py" bench/train_speed.py --repeat 3 --threads 1 --no-sklearn | sed "s/^/[$build] /"
        "$py" bench/gaussian_speed.py --betas 1000 --repeat 3 --threads 1 | sed "s/^/[$build] /"
    done
done
