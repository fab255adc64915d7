"""Handlers of the measuring commands ``cyrbm ais``, ``cyrbm ratio`` and ``cyrbm logz``.

Each takes the docopt arguments dict and returns a JSON-ready dict (keys documented in
docs/json_keys_ais.md); ``cyrbm.cli`` prints it.  Usage lines (in cli.py):

    cyrbm ais MODEL [--data DATA] [--base-data DATA] [--runs R] [--schedule SCHED] [--seed S] [--threads T] [--json]
    cyrbm ratio MODEL_A MODEL_B [--data DATA] [--runs R] [--schedule SCHED] [--start HOW] [--burn-in N] [--chains C] [--steps-between N] [--seed S] [--threads T] [--json]
    cyrbm logz MODEL --exact [--threads T] [--json]

Defaults: --runs 100, --schedule paper, --seed 0, --start auto, --burn-in 20000, --chains R
(one per run), --steps-between 100.  DATA is anything
``cyrbm.datasets.load_data`` reads (a file or a bundled data set such as "digits").
Every user error is raised as a CyrbmError whose message is one sentence.
"""
import time

from cyrbm.annealing import (RATIO_BURN_IN, RATIO_STEPS_BETWEEN, AnnealingError, Annealer,
                             exact_log_partition)
from cyrbm.datasets import load_data
from cyrbm.models import RBM

DEFAULTS = {"--runs": "100", "--schedule": "paper", "--seed": "0", "--burn-in": str(RATIO_BURN_IN),
            "--steps-between": str(RATIO_STEPS_BETWEEN), "--start": "auto"}


def _opt(args, key):
    value = args.get(key)
    return DEFAULTS.get(key) if value is None else value


def _whole(args, key, minimum, what):
    raw = _opt(args, key)
    try:
        value = int(str(raw), 10)
    except (TypeError, ValueError):
        raise AnnealingError(f"{key} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise AnnealingError(f"{key} must be at least {minimum} ({what}), not {value}.")
    return value


def _threads(args):
    from cyrbm.cli import parse_threads
    return parse_threads(args.get("--threads"))


def _data(args, key):
    source = args.get(key)
    return None if source is None else load_data(source)


def run_ais(args):
    """``cyrbm ais``: ln Z of MODEL by AIS from a base-rate model (SM08 Eq. 13-18).

    The base rate is fitted to --base-data, else to --data, else it is zero.  With
    --data the average log-probability of DATA is reported too.
    """
    model = RBM.load(args["MODEL"])
    runs = _whole(args, "--runs", 2, "AIS needs two runs to estimate its error")
    seed = _whole(args, "--seed", 0, "seeds are non-negative")
    annealer = Annealer(runs=runs, schedule=_opt(args, "--schedule"), seed=seed,
                        threads=_threads(args), progress=None)
    data = _data(args, "--data")
    base_data = _data(args, "--base-data")
    fit_to = base_data if base_data is not None else data
    result = annealer.log_partition(model, base_rate=None if fit_to is None else "data",
                                    data=data, base_data=fit_to)
    out = {"command": "ais", "model": str(args["MODEL"]), "n_visible": model.n_visible,
           "n_hidden": model.n_hidden, "data": args.get("--data"),
           "base_data": args.get("--base-data") or args.get("--data")}
    out.update(result.to_dict())
    return out


def run_ratio(args):
    """``cyrbm ratio``: ln(Z_B / Z_A) of MODEL_B over MODEL_A by AIS (SM08 Sec. 3.2).

    The runs start from exact draws of MODEL_A when its smaller layer has at most 20
    units (--start auto, the default, or exact), which also gives ln Z_A and so ln Z_B-hat;
    otherwise (or with --start gibbs) by block Gibbs sampling: --chains chains (default
    one per run) started at --data rows (or random bits), each run for --burn-in sweeps
    and then giving a state every --steps-between sweeps.  With --data, the mean of
    ln p_B(v) - ln p_A(v) is reported.
    """
    model_a = RBM.load(args["MODEL_A"])
    model_b = RBM.load(args["MODEL_B"])
    runs = _whole(args, "--runs", 2, "AIS needs two runs to estimate its error")
    seed = _whole(args, "--seed", 0, "seeds are non-negative")
    burn_in = _whole(args, "--burn-in", 0, "sweeps")
    steps_between = _whole(args, "--steps-between", 1, "sweeps")
    chains = None if args.get("--chains") is None else _whole(args, "--chains", 1, "chains")
    if chains is not None and chains > runs:
        raise AnnealingError(f"--chains must be at most --runs ({runs}), not {chains}.")
    start = _opt(args, "--start")
    if start not in ("auto", "exact", "gibbs"):
        raise AnnealingError(f"--start must be auto, exact or gibbs, not {start!r}.")
    threads = _threads(args)
    annealer = Annealer(runs=runs, schedule=_opt(args, "--schedule"), seed=seed,
                        threads=threads, progress=None)
    data = _data(args, "--data")
    result = annealer.log_ratio(model_a, model_b, data=data, start=start,
                                burn_in=burn_in,
                                chains=chains, steps_between=steps_between)
    out = {"command": "ratio", "model_a": str(args["MODEL_A"]), "model_b": str(args["MODEL_B"]),
           "n_visible": model_a.n_visible, "data": args.get("--data")}
    out.update(result.to_dict())
    return out


def run_logz(args):
    """``cyrbm logz --exact``: ln Z of MODEL by summing over its smaller layer."""
    if not args.get("--exact"):
        raise AnnealingError("cyrbm logz computes ln Z exactly only; add --exact, or use "
                             "'cyrbm ais' for an estimate.")
    model = RBM.load(args["MODEL"])
    threads = _threads(args)
    m = min(model.n_visible, model.n_hidden)
    t0 = time.perf_counter()
    log_z = exact_log_partition(model, threads=threads)
    seconds = time.perf_counter() - t0
    return {"command": "logz", "method": "exact", "model": str(args["MODEL"]),
            "n_visible": model.n_visible, "n_hidden": model.n_hidden,
            "log_Z": log_z, "terms": 2 ** m, "enumerated_layer":
            "hidden" if model.n_hidden <= model.n_visible else "visible",
            "seconds": seconds, "threads": threads}


__all__ = ["run_ais", "run_ratio", "run_logz"]
