#!/usr/bin/env bash
# The speed benches of two builds of cyrbm in one run, alternately, so that the machine's
# drift falls on both: binary AIS (ais_speed.py: the paper's schedule on a 784 x 500 RBM,
# against the dense floor), a binary CD-1 epoch (train_speed.py: 60,000 x 784 -> 500),
# and a Gaussian RBM's CD-1 epoch and AIS (gaussian_speed.py, against NumPy and the
# floor), all on one thread.  Each line of output names the build it came from.
#
#   bash bench/compare_builds.sh OLD_CHECKOUT OLD_PYTHON NEW_CHECKOUT NEW_PYTHON [ROUNDS]
#
# Each PYTHON is an environment with its CHECKOUT's build installed (pip install .); each
# build runs its own checkout's bench scripts (their imports follow its layout).
set -euo pipefail
old_dir="$1"; old_py="$2"; new_dir="$3"; new_py="$4"; rounds="${5:-2}"
for round in $(seq "$rounds"); do
    for build in old new; do
        dir="$old_dir"; py="$old_py"
        [ "$build" = new ] && dir="$new_dir" && py="$new_py"
        echo "=== round $round, $build build ($dir)"
        (cd "$dir" && "$py" bench/ais_speed.py --repeat 3 --skip-numpy --threads 1 \
            && "$py" bench/train_speed.py --repeat 3 --threads 1 --no-sklearn \
            && "$py" bench/gaussian_speed.py --betas 1000 --repeat 3 --threads 1) \
            | sed "s/^/[$build] /"
    done
done
