"""cyrbm.distributed: every estimator on a Dask LocalCluster of 2 worker processes gives
the local run's bits, for several chunk sizes; a worker killed mid-run changes nothing;
``cyrbm ais --scheduler`` against a scheduler and workers started as commands.

Tiny models throughout: the cluster's start-up (a few seconds) is shared by the module.
"""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import cyrbm  # noqa: E402
from cyrbm.distributed import DistributedError, check_client, slices  # noqa: E402

from _commands import child_env, cyrbm_command, run  # noqa: E402
from _reference import tiny_dbn  # noqa: E402

CHUNKS = [1, 3, 64]


@pytest.fixture(scope="module")
def client():
    # worker processes start with this process's sys.path: a folder holding a module
    # named distributed (bench/, which other tests put there) would hide dask's package
    kept = list(sys.path)
    sys.path[:] = [p for p in sys.path
                   if not os.path.exists(os.path.join(p or ".", "distributed.py"))]
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
    sys.path[:] = kept


@pytest.fixture(scope="module")
def rbm():
    return cyrbm.RBM.random(12, 7, seed=3, scale=0.5)


@pytest.fixture(scope="module")
def data():
    return (np.random.default_rng(1).random((9, 12)) < 0.4).astype(np.uint8)


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_slices_and_refusals():
    assert slices(7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert slices(0, 3) == []
    with pytest.raises(DistributedError, match="chunk"):
        slices(7, 0)
    with pytest.raises(DistributedError, match="distributed.Client"):
        check_client("tcp://localhost:8786")
    assert check_client(None) is None


def test_no_dask_needed_until_a_client(monkeypatch, tmp_path):
    out = subprocess.run([sys.executable, "-c", "import sys, cyrbm, cyrbm.estimators.annealing, "
                          "cyrbm.sweep; print(sorted(m for m in sys.modules "
                          "if m.split('.')[0] in ('dask', 'distributed')))"],
                         capture_output=True, text=True, check=True, env=child_env(),
                         cwd=tmp_path)
    assert out.stdout.strip() == "[]"
    monkeypatch.setitem(sys.modules, "distributed", None)       # as if not installed
    ann = cyrbm.Annealer(runs=2, schedule="linear:3", progress=False)
    with pytest.raises(DistributedError, match=r"extra 'distributed'.*cyrbm\[distributed\]"):
        ann.log_partition(cyrbm.RBM.random(4, 3), client=object())


def test_log_partition_bits(client, rbm, data):
    ann = cyrbm.Annealer(runs=7, schedule="linear:60", seed=5, progress=False)
    local = ann.log_partition(rbm, base_rate="data", data=data)
    for chunk in CHUNKS:
        far = ann.log_partition(rbm, base_rate="data", data=data, client=client, chunk=chunk)
        same(far.log_weights, local.log_weights)
        same(far.samples, local.samples)
        assert far.log_Z == local.log_Z and far.log_sigma == local.log_sigma
        assert far.avg_log_prob == local.avg_log_prob
    same(ann.log_partition(rbm, client=client).log_weights, ann.log_partition(rbm).log_weights)


@pytest.mark.parametrize("how", [dict(start="exact"),
                                 dict(start="gibbs", burn_in=30),
                                 dict(start="gibbs", burn_in=30, chains=3, steps_between=4)])
def test_log_ratio_bits(client, rbm, data, how):
    B = cyrbm.RBM.random(12, 5, seed=4, scale=0.5)
    ann = cyrbm.Annealer(runs=8, schedule="linear:40", seed=2, progress=False)
    local = ann.log_ratio(rbm, B, data, **how)
    for chunk in CHUNKS:
        far = ann.log_ratio(rbm, B, data, client=client, chunk=chunk, **how)
        same(far.log_weights, local.log_weights)
        same(far.samples, local.samples)
        assert far.log_ratio == local.log_ratio


def _own_pair(kind):
    """Two small models of one unit type with their own AIS runs (Gaussian, SRBM)."""
    from cyrbm.models.gaussian import GaussianRBM
    from cyrbm.models.srbm import SRBM
    rng = np.random.default_rng(8)
    if kind == "gaussian":
        return [GaussianRBM(rng.normal(0, 0.4, (6, m)), rng.normal(0, 1, 6),
                            rng.normal(0, 1, m), sigma=rng.uniform(0.6, 1.4, 6))
                for m in (3, 4)]
    L = rng.normal(0, 0.3, (6, 6))
    L = L + L.T
    np.fill_diagonal(L, 0.0)
    return [SRBM(rng.normal(0, 0.4, (6, m)), rng.normal(0, 1, 6), rng.normal(0, 1, m), L * k)
            for m, k in ((3, 1.0), (4, 0.5))]


@pytest.mark.parametrize("kind", ["gaussian", "lateral"])
def test_own_runs_bits(client, kind):
    """AIS ln Z and ratio AIS of Gaussian RBMs and SRBMs on the cluster: the local bits."""
    A, B = _own_pair(kind)
    ann = cyrbm.Annealer(runs=7, schedule="linear:40", seed=5, progress=False)
    rows = A.sample(9, 5, seed=1)
    local = ann.log_partition(A, data=rows)
    for how in (dict(start="exact"), dict(start="gibbs", burn_in=10, chains=3,
                                           steps_between=2)):
        ratio = ann.log_ratio(A, B, rows, **how)
        for chunk in CHUNKS:
            far = ann.log_ratio(A, B, rows, client=client, chunk=chunk, **how)
            same(far.log_weights, ratio.log_weights)
            same(far.samples, ratio.samples)
    for chunk in CHUNKS:
        far = ann.log_partition(A, data=rows, client=client, chunk=chunk)
        same(far.log_weights, local.log_weights)
        same(far.samples, local.samples)
        assert far.avg_log_prob == local.avg_log_prob


def test_evaluate_bits(client, rbm, data):
    ann = cyrbm.Annealer(runs=6, schedule="linear:30", seed=1, progress=False)
    local = ann.evaluate(rbm, data, chains=3, simulate=4)
    for chunk in (1, 5):
        far = ann.evaluate(rbm, data, chains=3, simulate=4, client=client, chunk=chunk)
        same(far.ais.log_weights, local.ais.log_weights)
        same(far.raise_log_weights, local.raise_log_weights)
        same(far.simulation_log_weights, local.simulation_log_weights)
        assert far.gap == local.gap and far.simulation == local.simulation
    # the path of a ratio from a base RBM
    A = cyrbm.RBM.random(12, 4, seed=8, scale=0.3)
    local = ann.evaluate(rbm, data, chains=2, base_model=A)
    far = ann.evaluate(rbm, data, chains=2, base_model=A, client=client, chunk=4)
    same(far.raise_log_weights, local.raise_log_weights)
    assert far.gap == local.gap


@pytest.fixture(scope="module")
def dbn_case():
    layers = tiny_dbn((10, 8, 6), seed=1)
    V = (np.random.default_rng(2).random((7, 10)) < 0.5).astype(np.uint8)
    return cyrbm.DBN(layers), V


@pytest.mark.parametrize("method,kw", [("chib", dict(steps=5, repeats=3)),
                                       ("ais_per_vector", dict(runs=3, schedule="linear:20")),
                                       ("variational", dict(samples=4)),
                                       ("harmonic", dict(samples=6))])
def test_bound_estimator_bits(client, dbn_case, method, kw):
    dbn, V = dbn_case
    est = cyrbm.BoundEstimator(dbn, log_Z=3.25, seed=4)
    local = getattr(est, method)(V, **kw)
    for chunk in CHUNKS:
        far = getattr(est, method)(V, client=client, chunk=chunk, **kw)
        same(far.values, local.values)
        if local.per_sample is not None:
            same(far.per_sample, local.per_sample)


def test_log_z_estimated_on_the_cluster(client, dbn_case):
    dbn, V = dbn_case
    ann = cyrbm.Annealer(runs=5, schedule="linear:30", seed=0, progress=False)
    local = cyrbm.BoundEstimator(dbn, annealer=ann).chib(V, steps=3)
    far = cyrbm.BoundEstimator(dbn, annealer=ann).chib(V, steps=3, client=client, chunk=2)
    same(far.values, local.values)
    same(far.ais.log_weights, local.ais.log_weights)


def test_killed_worker_same_bits(client):
    """A worker dies (os._exit) while it runs a task; its nanny starts a new one, the
    lost tasks are run again with the same streams, and the result keeps its bits."""
    import threading
    model = cyrbm.RBM.random(64, 40, seed=6, scale=0.2)
    ann = cyrbm.Annealer(runs=8, schedule="linear:300000", seed=9, progress=False)
    local = ann.log_partition(model)
    out = {}
    run = threading.Thread(target=lambda: out.update(
        res=ann.log_partition(model, client=client, chunk=2)))
    before = set(client.scheduler_info()["workers"])
    run.start()
    busy = []
    for _ in range(400):                   # until a worker is running one of its tasks
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            break
        time.sleep(0.01)
    assert busy, "no task started"
    victim = sorted(busy)[0]
    try:
        client.run(os._exit, 1, workers=[victim])
    except Exception:                      # the worker died answering
        pass
    run.join(timeout=120)
    assert "res" in out
    same(out["res"].log_weights, local.log_weights)
    same(out["res"].samples, local.samples)
    client.wait_for_workers(2, timeout=60)
    assert victim not in set(client.scheduler_info()["workers"]) and victim in before


def test_ctrl_c_is_answered(client):
    """SIGINT while the client waits for its tasks: KeyboardInterrupt within about a
    second (the waits are cut to one second), not when the tasks end."""
    import signal
    import threading
    model = cyrbm.RBM.random(200, 100, seed=6, scale=0.1)
    ann = cyrbm.Annealer(runs=8, schedule="linear:300000", seed=9, progress=False)
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        ann.log_partition(model, client=client, chunk=2)
    assert time.perf_counter() - t0 < 4.0
    timer.join()


def test_sweep_same_bits_and_files(client, tmp_path):
    """One task per configuration: the same rows as a local sweep, the table written as
    JSON and CSV, the models saved (and loadable), the best named."""
    from cyrbm.sweep import SweepError, sweep, sweep_from_config
    X = cyrbm.load_data("digits:train")[:200]
    T = cyrbm.load_data("digits:test")[:50]
    grid = {"n_hidden": [6, 9], "method": ["cd", "pcd"]}
    kw = dict(fixed={"epochs": 2, "learning_rate": 0.1}, seed=3, runs=8,
              schedule="linear:100")
    local = sweep(X, T, grid, **kw)
    far = sweep(X, T, grid, client=client, out_dir=tmp_path / "far", **kw)
    keys = ["name", "settings", "log_Z", "avg_log_prob", "avg_log_prob_3sigma_low", "ess"]
    assert [[r[k] for k in keys] for r in far["rows"]] == \
        [[r[k] for k in keys] for r in local["rows"]]
    assert far["best"] == local["best"]
    assert len(far["rows"]) == 4
    saved = json.loads((tmp_path / "far" / "results.json").read_text())
    assert saved["best"] == far["best"]
    lines = (tmp_path / "far" / "results.csv").read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("name,settings,log_Z")
    best = next(r for r in saved["rows"] if r["name"] == saved["best"])
    m = cyrbm.RBM.load(tmp_path / "far" / best["model"])
    again = cyrbm.Trainer(**best["settings"], seed=3).fit(X)
    same(m.W, again.W)
    with pytest.raises(SweepError, match="not a setting"):
        sweep(X, T, {"hidden": [3]})
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"data": "digits:train", "grid": {"n_hidden": [3]}}')
    with pytest.raises(SweepError, match="needs 'test'"):
        sweep_from_config(cfg)


@pytest.mark.parametrize("argv", [
    ["ratio", "{a}", "{b}", "--runs", "4", "--schedule", "linear:30"],
    ["evaluate", "{b}", "--data", "{v}", "--runs", "4", "--chains", "2",
     "--schedule", "linear:30"],
    ["bound", "{dbn}", "--data", "{w}", "--method", "chib", "--steps", "3", "--logz", "2.5"],
    ["bound", "{dbn}", "--data", "{w}", "--runs", "4", "--schedule", "linear:30"]])
def test_cli_commands_with_scheduler(client, tmp_path, rbm, data, dbn_case, capsys, argv):
    """ratio, evaluate and bound with --scheduler print the numbers they print without."""
    files = {"a": tmp_path / "a.npz", "b": tmp_path / "b.npz", "v": tmp_path / "v.npy",
             "dbn": tmp_path / "dbn.npz", "w": tmp_path / "w.npy"}
    rbm.save(files["a"])
    cyrbm.RBM.random(12, 5, seed=4, scale=0.5).save(files["b"])
    np.save(files["v"], data)
    dbn_case[0].save(files["dbn"])
    np.save(files["w"], dbn_case[1])
    args = [a.format(**files) for a in argv] + ["--json"]
    code, near, err = run(args, capsys)
    assert code == 0, err
    code, far, err = run(args + ["--scheduler", client.scheduler.address], capsys)
    assert code == 0, err
    assert _untimed(json.loads(near)) == _untimed(json.loads(far))


def _untimed(x):
    """``x`` without its timings (every key naming seconds), at any depth."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if "seconds" not in k}
    return [_untimed(v) for v in x] if isinstance(x, list) else x


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_ais_and_sweep_with_scheduler(tmp_path, rbm, capsys):
    """``cyrbm ais --scheduler`` and ``cyrbm sweep --scheduler`` against ``dask
    scheduler`` and ``dask worker`` started as commands (what the README tells a
    cluster's machines to run): the numbers of the same commands without it."""
    dask = Path(sys.executable).with_name("dask")
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    model = tmp_path / "m.npz"
    rbm.save(model)
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = child_env()
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--dashboard-address", ":0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([str(dask), "worker", address, "--nthreads", "1",
                                           "--nworkers", "1", "--no-dashboard"], env=env,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        c = distributed.Client(address, timeout=30)
        c.wait_for_workers(2, timeout=60)
        c.close()
        args = cyrbm_command() + ["ais", str(model), "--runs", "6", "--schedule", "linear:50",
                "--seed", "3", "--json"]
        far = subprocess.run(args + ["--scheduler", address], env=env, capture_output=True,
                             text=True, timeout=120)
        assert far.returncode == 0, far.stderr
        near = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        f, n = json.loads(far.stdout), json.loads(near.stdout)
        assert f["log_Z"] == n["log_Z"] and f["log_Z_3sigma_interval"] == n["log_Z_3sigma_interval"]
        # a scheduler that does not answer: one sentence, exit 1
        bad = subprocess.run(args + ["--scheduler", f"tcp://127.0.0.1:{_free_port()}"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert bad.returncode == 1 and "no Dask scheduler answered" in bad.stderr
        assert "Traceback" not in bad.stderr
        cfg = tmp_path / "sweep.json"
        cfg.write_text(json.dumps({"data": "digits:train", "test": "digits:test", "seed": 1,
                                   "grid": {"n_hidden": [5, 7]}, "fixed": {"epochs": 2},
                                   "ais": {"runs": 4, "schedule": "linear:50"}}))
        code, out, err = run(["sweep", cfg, "-o", tmp_path / "here", "--json"], capsys)
        assert code == 0, err
        far = subprocess.run(cyrbm_command() + ["sweep", str(cfg), "-o", str(tmp_path / "far"),
                                                "--scheduler", address, "--json"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert far.returncode == 0, far.stderr
        here, there = json.loads(out), json.loads(far.stdout)
        assert [r["avg_log_prob"] for r in here["rows"]] == \
            [r["avg_log_prob"] for r in there["rows"]]
        assert here["best"] == there["best"]
        assert (tmp_path / "far" / "results.csv").exists()
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


# ------------------------------------------- each client= estimator runs on the workers
def _tiny_pairs():
    A, B = _own_pair("gaussian")
    S, T = _own_pair("lateral")
    return {"gaussian": (A, B, A.sample(5, 5, seed=1)), "srbm": (S, T, S.sample(5, 5, seed=1))}


def _worker_cases(rbm, data, dbn_case, tmp_path):
    """Each public estimator that takes ``client=``: (the callables it stands for, a call
    of it on ``client``, the task functions that must run on the workers)."""
    from cyrbm.estimators import chib
    from cyrbm.sweep import sweep, sweep_from_config
    ann = cyrbm.Annealer(runs=4, schedule="linear:20", seed=1, progress=False)
    B = cyrbm.RBM.random(12, 5, seed=4, scale=0.5)
    dbn, V = dbn_case
    est = cyrbm.BoundEstimator(dbn, log_Z=3.25, seed=4)
    own = _tiny_pairs()
    X = (np.random.default_rng(3).random((40, 12)) < 0.5).astype(np.uint8)
    config = tmp_path / "sweep.json"
    np.save(tmp_path / "x.npy", X)
    config.write_text(json.dumps({"data": str(tmp_path / "x.npy"), "test": str(tmp_path / "x.npy"),
                                  "grid": {"n_hidden": [3, 4]},
                                  "fixed": {"epochs": 1, "batch_size": 10, "monitor_size": 0},
                                  "ais": {"runs": 2, "schedule": "linear:10"}}))
    sweep_kw = dict(fixed={"epochs": 1, "batch_size": 10, "monitor_size": 0}, runs=2,
                    schedule="linear:10")
    return {
        "log_partition": ({"Annealer.log_partition", "Annealer._rbm_log_partition"},
                          lambda c: ann.log_partition(rbm, data=data, client=c, chunk=2),
                          {"_partition_task"}),
        "log_partition-gaussian": ({"gaussian_log_partition", "GaussianRBM._ais_log_partition"},
                                   lambda c: ann.log_partition(own["gaussian"][0], client=c,
                                                               chunk=2),
                                   {"_gaussian_runs"}),
        "log_partition-srbm": ({"srbm_log_partition", "SRBM._ais_log_partition"},
                               lambda c: ann.log_partition(own["srbm"][0], client=c, chunk=2),
                               {"_srbm_runs"}),
        "log_ratio": ({"Annealer.log_ratio", "Annealer._rbm_log_ratio"},
                      lambda c: ann.log_ratio(rbm, B, data, start="gibbs", burn_in=5,
                                              client=c, chunk=2),
                      {"_ratio_task"}),
        "log_ratio-own": ({"own_log_ratio"},
                          lambda c: ann.log_ratio(*own["gaussian"], start="exact", client=c,
                                                  chunk=2),
                          {"_own_ratio_task"}),
        "evaluate": ({"Annealer.evaluate", "evaluate", "raise_log_weights"},
                     lambda c: ann.evaluate(rbm, data, chains=2, client=c, chunk=3),
                     {"_partition_task", "_raise_runs"}),
        "variational": ({"BoundEstimator.variational"},
                        lambda c: est.variational(V, samples=3, client=c, chunk=3),
                        {"_terms_slice"}),
        "harmonic": ({"BoundEstimator.harmonic"},
                     lambda c: est.harmonic(V, samples=3, client=c, chunk=3), {"_terms_slice"}),
        "chib": ({"BoundEstimator.chib", "chib_log_prob"},
                 lambda c: est.chib(V, steps=2, repeats=2, client=c, chunk=3), {"_item_slice"}),
        "chib_trace": ({"chib_trace"},
                       lambda c: chib.chib_trace(dbn, V, 3.25, steps=[1, 2], repeats=2,
                                                 client=c), {"_item_slice"}),
        "ais_per_vector": ({"BoundEstimator.ais_per_vector", "ais_per_vector"},
                           lambda c: est.ais_per_vector(V, runs=2, schedule="linear:10",
                                                        client=c, chunk=3),
                           {"_item_slice"}),
        "sweep": ({"sweep"}, lambda c: sweep(X, X, {"n_hidden": [3, 4]}, client=c, **sweep_kw),
                  {"_config_task"}),
        "sweep_from_config": ({"sweep_from_config"},
                              lambda c: sweep_from_config(config, client=c), {"_config_task"}),
    }


def _client_callables():
    """Every public function or method of the package (cli and the cluster's own module
    aside) with a ``client`` parameter, by qualified name, read from the code."""
    import importlib
    import inspect
    import pkgutil
    found = set()
    for info in pkgutil.walk_packages(cyrbm.__path__, "cyrbm."):
        if info.name.startswith(("cyrbm.cli", "cyrbm.distributed", "cyrbm.sklearn")):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != info.name:
                continue
            members = [(name, obj)] if inspect.isfunction(obj) else (
                [(f"{name}.{m}", f) for m, f in vars(obj).items() if inspect.isfunction(f)]
                if inspect.isclass(obj) else [])
            for qualname, f in members:
                if "client" in inspect.signature(f).parameters and not any(
                        part.startswith("_") for part in qualname.split(".")):
                    found.add(qualname)
    return found


_TASK_KEY = __import__("re").compile(r"^cyrbm-(\w+)-[0-9a-f]{32}-\d+$")


def _tasks_on_workers(client, call):
    """Run ``call(client)`` under the cluster's task stream: {task function: the workers
    that ran it} for cyrbm's tasks (map_slices keys them cyrbm-<function>-<run>-<i0>)."""
    with distributed.get_task_stream(client) as stream:
        call(client)
    ran = {}
    for record in stream.data:
        match = _TASK_KEY.match(str(record["key"]))
        if match:
            ran.setdefault(match.group(1), set()).add(record["worker"])
    return ran


def _assert_on_workers(client, call, tasks):
    workers = set(client.scheduler_info()["workers"])
    ran = _tasks_on_workers(client, call)
    for task in tasks:
        assert ran.get(task), f"no {task} task ran on a worker (ran: {sorted(ran)})"
        assert ran[task] <= workers, (task, ran[task], workers)


def test_every_client_estimator_is_in_the_table(rbm, data, dbn_case, tmp_path):
    """The table below covers every public callable with client= (read from the code),
    so a new one must be shown to run on the workers too."""
    covered = set().union(*(c[0] for c in _worker_cases(rbm, data, dbn_case,
                                                       tmp_path).values()))
    public = _client_callables()
    assert "Annealer.log_partition" in public and "sweep" in public
    assert public <= covered, sorted(public - covered)


@pytest.mark.parametrize("name", ["log_partition", "log_partition-gaussian",
                                  "log_partition-srbm", "log_ratio", "log_ratio-own",
                                  "evaluate", "variational", "harmonic", "chib", "chib_trace",
                                  "ais_per_vector", "sweep", "sweep_from_config"])
def test_each_client_estimator_runs_its_tasks_on_the_workers(client, rbm, data, dbn_case,
                                                             tmp_path, monkeypatch, name):
    """The cluster's task stream shows the estimator's tasks (named for its slice
    function) running on the cluster's worker processes; the same estimator with
    map_slices replaced by a local loop (a path that silently runs here) fails the same
    check, so the check can fail."""
    import cyrbm.distributed as cd
    _, call, tasks = _worker_cases(rbm, data, dbn_case, tmp_path)[name]
    _assert_on_workers(client, call, tasks)

    def local(client, task, n, chunk, *, shared=(), args=(), **kw):
        return [task(*shared, i0, i1, *args, threads=1) for i0, i1 in cd.slices(n, chunk)]
    real = cd.map_slices
    for module in list(sys.modules.values()):     # every module holding the name
        if getattr(module, "__name__", "").startswith("cyrbm") and \
                getattr(module, "map_slices", None) is real:
            monkeypatch.setattr(module, "map_slices", local)
    with pytest.raises(AssertionError, match="ran on a worker"):
        _assert_on_workers(client, call, tasks)
