"""Sweeps: train a grid of configurations and measure each one, one task per configuration.

Every hyper-parameter sweep (hidden units, k, learning rate, sampler) needs each trained
RBM's own ln Z: :func:`sweep` trains each configuration with :class:`cyrbm.Trainer` and
measures it by AIS from a base-rate model fitted to the training data (SM08 Eq. 13-18):
ln Z-hat and the average test log-probability with its 3-sigma interval.  Every
configuration uses the sweep's one seed, so its result depends only on its settings
and that seed: on one machine or as a task on a Dask cluster (``client``), first run or
re-run after a lost worker, the same bits.

The configuration file (JSON; ``cyrbm sweep CONFIG -o DIR``)::

    {"data": "digits:train", "test": "digits:test", "seed": 0,
     "grid": {"n_hidden": [16, 25], "method": ["cd", "pcd"]},
     "fixed": {"epochs": 20, "learning_rate": 0.1},
     "ais": {"runs": 100, "schedule": "paper"}}

``grid`` gives a list of values for each of :class:`cyrbm.Trainer`'s settings; the
configurations are every combination (the first key varying slowest), each with the
``fixed`` settings.  ``ais`` sets the :class:`cyrbm.Annealer` (default 100 runs, the
paper's schedule).
"""
import csv
import inspect
import io
import itertools
import json
import math
import os
import time

import numpy as np

from cyrbm.estimators.annealing import Annealer
from cyrbm.errors import CyrbmError
from cyrbm.estimators.results import json_number
from cyrbm.training.trainer import Trainer

__all__ = ["SweepError", "sweep", "sweep_from_config", "configurations",
           "check_output_folder"]

#: Trainer settings a sweep does not take from a configuration (the sweep sets them)
_NOT_SWEPT = {"self", "seed", "threads", "progress", "callback", "checkpoint",
              "checkpoint_every", "checkpoint_seconds"}
_COLUMNS = ["name", "settings", "log_Z", "log_Z_3sigma_low", "log_Z_3sigma_high",
            "avg_log_prob", "avg_log_prob_3sigma_low", "avg_log_prob_3sigma_high", "ess",
            "model", "train_seconds", "ais_seconds"]


class SweepError(CyrbmError, ValueError):
    """A sweep's configuration that cannot be run."""


def configurations(grid, fixed=None):
    """Every combination of ``grid`` (setting: list of values), each with ``fixed``: a
    list of dicts of :class:`cyrbm.Trainer` settings, the first key varying slowest."""
    if not isinstance(grid, dict) or not grid:
        raise SweepError("a sweep's grid must be an object of settings, each with a list "
                         "of values.")
    fixed = dict(fixed or {})
    allowed = set(inspect.signature(Trainer.__init__).parameters) - _NOT_SWEPT
    for key in list(grid) + list(fixed):
        if key not in allowed:
            raise SweepError(f"{key!r} is not a setting a sweep can vary (Trainer's: "
                             f"{', '.join(sorted(allowed))}).")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"the grid's {key!r} must be a non-empty list of values, not "
                             f"{values!r}.")
    both = set(grid) & set(fixed)
    if both:
        raise SweepError(f"{sorted(both)[0]!r} is both in the grid and fixed.")
    keys = list(grid)
    return [dict(fixed, **dict(zip(keys, values)))
            for values in itertools.product(*(grid[k] for k in keys))]


def _config_task(data, test, configs, i0, i1, settings, *, threads):
    """Train and measure configurations i0 .. i1 (a task of cyrbm.distributed): a list
    of (the model, its row of the results table)."""
    seed, runs, schedule = settings
    out = []
    for i in range(i0, i1):
        t0 = time.perf_counter()
        model = Trainer(**configs[i], seed=seed, threads=threads, progress=False).fit(data)
        t1 = time.perf_counter()
        res = Annealer(runs=runs, schedule=schedule, seed=seed, threads=threads,
                       progress=False).log_partition(model, base_rate="data", data=test,
                                                     base_data=data)
        lz, lp = res.log_Z_interval(3), res.avg_log_prob_interval(3)
        out.append((model, {
            "name": _name(i), "settings": configs[i],
            "log_Z": json_number(res.log_Z), "log_Z_3sigma_low": json_number(lz[0]),
            "log_Z_3sigma_high": json_number(lz[1]),
            "avg_log_prob": json_number(res.avg_log_prob),
            "avg_log_prob_3sigma_low": json_number(lp[0]),
            "avg_log_prob_3sigma_high": json_number(lp[1]), "ess": json_number(res.ess),
            "train_seconds": t1 - t0, "ais_seconds": time.perf_counter() - t1}))
    return out


def _name(i):
    """The name of configuration ``i`` (its row, its model file models/<name>.npz)."""
    return f"config-{i:03d}"


def check_output_folder(out_dir, n_configs, inputs=()):
    """Make the output folder ready and pass every file a sweep of ``n_configs``
    configurations writes there (results.json, results.csv, models/<name>.npz) through
    the one output check (cyrbm._io.check_outputs) with the files it reads (``inputs``:
    (what, path) pairs), before any work: a refusal is one sentence."""
    from cyrbm import _io
    out_dir = os.fspath(out_dir)
    inputs = [(what, path) for what, path in inputs if isinstance(path, (str, os.PathLike))]
    if not os.path.isdir(out_dir):
        _io.check_outputs([("the output folder", out_dir, None)], inputs)
    try:
        os.makedirs(os.path.join(out_dir, "models"), exist_ok=True)
    except OSError as exc:
        raise SweepError(f"cannot make the output folder '{out_dir}': "
                         f"{exc.strerror or exc}.") from None
    _io.check_outputs(
        [(f"the output folder's {name}", os.path.join(out_dir, name), kind)
         for name, kind in (("results.json", "text"), ("results.csv", "text"))]
        + [("the output folder's model file", os.path.join(out_dir, "models",
                                                               f"{_name(i)}.npz"), "npz")
           for i in range(n_configs)], inputs)


def sweep(data, test, grid, *, fixed=None, seed=0, runs=100, schedule="paper",
          out_dir=None, client=None, threads=None, progress=None, reads=()):
    """Train every configuration of ``grid`` (with ``fixed``) on ``data`` and measure it
    on ``test`` by AIS (SM08 Eq. 13-18): one task per configuration on ``client``'s Dask
    cluster, or one after another here; the same numbers either way.

    With ``out_dir`` writes ``results.json`` (the rows and the best), ``results.csv`` and
    ``models/<name>.npz``, each atomically, all of them checked before any work
    (:func:`check_output_folder`; ``reads``: other files read, as (what, path), which
    no output may be).  Returns {"rows": [...], "best": name}: the configuration with
    the highest average test log-probability.
    """
    from cyrbm._io import atomic_write
    from cyrbm.data.datasets import load_data
    configs = configurations(grid, fixed)
    Annealer(runs=runs, schedule=schedule, seed=seed)       # bad settings: refused now
    if out_dir is not None:                                 # and a bad output folder
        check_output_folder(out_dir, len(configs), [("the training data", data),
                                                    ("the test data", test), *reads])
    data = load_data(data) if isinstance(data, (str, os.PathLike)) else np.asarray(data)
    test = load_data(test) if isinstance(test, (str, os.PathLike)) else np.asarray(test)
    settings = (int(seed), int(runs), schedule)
    if client is None:
        parts = []
        from cyrbm._progress import progress_bar
        bar = progress_bar(progress, len(configs), 0, "sweep", unit="config")
        try:
            for i in range(len(configs)):
                parts.append(_config_task(data, test, configs, i, i + 1, settings,
                                          threads=threads))
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    else:
        from cyrbm.distributed import map_slices
        parts = map_slices(client, _config_task, len(configs), 1,
                           shared=(data, test, configs), args=(settings,),
                           progress=progress, desc="sweep", unit="config")
    done = [pair for part in parts for pair in part]
    rows = [row for _, row in done]
    scores = [r["avg_log_prob"] if r["avg_log_prob"] is not None else -math.inf for r in rows]
    best = rows[int(np.argmax(scores))]["name"]
    result = {"rows": rows, "best": best, "seed": int(seed), "runs": int(runs),
              "schedule": schedule if isinstance(schedule, str) else "array"}
    if out_dir is not None:
        for model, row in done:
            row["model"] = os.path.join("models", f"{row['name']}.npz")
            model.save(os.path.join(out_dir, row["model"]))
        text = json.dumps(result, indent=1) + "\n"
        atomic_write(os.path.join(out_dir, "results.json"), lambda f: f.write(text.encode()))
        table = io.StringIO()
        writer = csv.DictWriter(table, _COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(dict(row, settings=json.dumps(row["settings"], sort_keys=True)))
        atomic_write(os.path.join(out_dir, "results.csv"),
                     lambda f: f.write(table.getvalue().encode()))
    return result


def sweep_from_config(path, out_dir=None, *, client=None, progress=None):
    """:func:`sweep` as a configuration file describes it (see the module docstring)."""
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except OSError as exc:
        raise SweepError(f"cannot read the sweep configuration '{path}': "
                         f"{exc.strerror or exc}.") from None
    except ValueError as exc:
        raise SweepError(f"the sweep configuration '{path}' is not JSON ({exc}).") from None
    if not isinstance(config, dict):
        raise SweepError(f"the sweep configuration '{path}' must be a JSON object.")
    unknown = set(config) - {"data", "test", "seed", "grid", "fixed", "ais"}
    if unknown:
        raise SweepError(f"the sweep configuration has an unknown key {sorted(unknown)[0]!r} "
                         f"(keys: data, test, seed, grid, fixed, ais).")
    for key in ("data", "test", "grid"):
        if key not in config:
            raise SweepError(f"the sweep configuration needs {key!r}.")
    here = os.path.dirname(os.path.abspath(path))
    for key in ("data", "test"):       # a file named relative to the configuration's folder
        if isinstance(config[key], str) and os.path.exists(os.path.join(here, config[key])):
            config[key] = os.path.join(here, config[key])
    ais = config.get("ais") or {}
    if not isinstance(ais, dict) or set(ais) - {"runs", "schedule"}:
        raise SweepError("the sweep configuration's 'ais' takes only 'runs' and 'schedule'.")
    return sweep(config["data"], config["test"], config["grid"], fixed=config.get("fixed"),
                 seed=config.get("seed", 0), runs=ais.get("runs", 100),
                 schedule=ais.get("schedule", "paper"), out_dir=out_dir, client=client,
                 progress=progress, reads=[("the sweep configuration CONFIG", path)])
