"""Estimators on a Dask cluster, with the same bits as one machine (the extra ``distributed``).

Every estimator of cyrbm draws from one random stream per AIS run, per test vector or per
chain (cyrbm/_random.pyx), so a slice of the runs or vectors computed anywhere gives the
numbers the whole computation gives for it.  :func:`map_slices` cuts 0 .. n into slices,
runs one task per slice on the workers of a ``distributed.Client`` and returns the slices'
results in order, for the estimator to combine with the functions its local run uses
(cyrbm/estimators/results.py: the log-mean-exp over all weights, in the same order).  So a result
is bit-identical to the local one for any number of workers and any slice size; a task
re-run after a lost worker gives the same bits.

* The model and the data are sent to the workers once (``client.scatter(...,
  broadcast=True)``), not with every task.
* A task uses its worker's share of its machine's cores: the usable cores of the host
  divided by the threads of all the workers on that host (at least 1).  A worker runs
  one task per thread, so the cores are not oversubscribed.
* The one progress bar (cyrbm/_progress.py) follows the tasks as they finish; Ctrl-C
  is answered within about a second (the tasks are released).

``import cyrbm`` does not import dask; a ``client`` given without it installed is
refused in one sentence naming the extra.
"""
import os
import uuid

from cyrbm._progress import progress_bar
from cyrbm.errors import CyrbmError

__all__ = ["DistributedError", "connect", "check_client", "default_chunk", "map_slices", "slices",
           "task_threads"]


class DistributedError(CyrbmError):
    """A cluster that cannot be used: dask missing, a scheduler not reachable, a bad chunk."""


def _dask():
    try:
        import distributed
    except ImportError:
        raise DistributedError("running on a Dask cluster needs the optional extra "
                               "'distributed' (pip install \"cyrbm[distributed]\").") from None
    return distributed


def connect(address, timeout=10):
    """A ``distributed.Client`` of the scheduler at ``address`` (``tcp://host:8786``)."""
    distributed = _dask()
    try:
        return distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise DistributedError(f"no Dask scheduler answered at {address} within {timeout} s "
                               f"({type(exc).__name__}).") from None


def check_client(client):
    """``client`` itself when it is None or a ``distributed.Client``; else one sentence."""
    if client is None:
        return None
    distributed = _dask()
    if not isinstance(client, distributed.Client):
        raise DistributedError(f"client must be a distributed.Client or None, not "
                               f"{type(client).__name__}.")
    return client


def slices(n, chunk):
    """Consecutive (i0, i1) of at most ``chunk`` items each that cover 0 <= i < n."""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise DistributedError(f"chunk must be a whole number of at least 1, not {chunk!r}.")
    return [(i0, min(n, i0 + chunk)) for i0 in range(0, n, chunk)]


def default_chunk(client, n):
    """Items a task by default: two tasks a worker thread of the cluster (so a slow
    worker holds up little), at least 1."""
    threads = sum(int(w.get("nthreads", 1)) for w in
                  client.scheduler_info(n_workers=-1)["workers"].values())
    return max(1, -(-n // (2 * max(1, threads))))


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _host(address):
    return address.split("://")[-1].rsplit(":", 1)[0]


def _host_threads(client):
    """OpenMP threads of one task on each host: its usable cores over its workers'
    threads (workers of one host share its cores)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    cores = client.run(_usable_cores)
    per_host, host_cores = {}, {}
    for address, info in workers.items():
        host = _host(address)
        per_host[host] = per_host.get(host, 0) + int(info.get("nthreads", 1))
        host_cores[host] = int(cores.get(address, 1))
    return {host: max(1, host_cores[host] // max(1, n)) for host, n in per_host.items()}


def task_threads(host_threads):
    """This task's threads: its host's share (see :func:`_host_threads`), 1 where the
    host is not known (a worker that joined after the task was planned)."""
    try:
        from distributed import get_worker
        return host_threads.get(_host(get_worker().address), 1)
    except (ImportError, ValueError):
        return 1


class _Slice:
    """One task's call, opaque to dask (which would read tuples in a task's arguments
    as tasks of its own)."""

    def __init__(self, task, i0, i1, args, host_threads):
        self.task, self.i0, self.i1, self.args = task, i0, i1, args
        self.host_threads = host_threads

    def __call__(self, *shared):
        return self.task(*shared, self.i0, self.i1, *self.args,
                         threads=task_threads(self.host_threads))


def map_slices(client, task, n, chunk, *, shared=(), args=(), progress=None, desc="",
               unit="run"):
    """``[task(*shared, i0, i1, *args, threads=T) for (i0, i1) in slices(n, chunk)]``, one
    task per slice on the workers of ``client``.

    ``task`` is a module-level function (the workers import it from the installed
    package); ``shared`` objects (the model, the data) are scattered to every worker
    once; ``args`` go with every task (keep them small).  The progress bar counts the
    items of the slices as they finish.  Returns the results in the order of the slices.
    """
    check_client(client)
    import distributed
    parts = slices(n, chunk)
    # each object whole (scatter would split a list or tuple into its items)
    futures_shared = [client.scatter([x], broadcast=True, hash=False)[0] for x in shared]
    host_threads = _host_threads(client)
    run = uuid.uuid4().hex
    futures = [client.submit(_Slice(task, i0, i1, args, host_threads), *futures_shared,
                             key=f"cyrbm-{task.__name__}-{run}-{i0}", retries=2)
               for i0, i1 in parts]
    index = {f.key: k for k, f in enumerate(futures)}
    results = [None] * len(parts)
    bar = progress_bar(progress, n, 0, desc, unit=unit)
    pending = set(futures)
    try:
        while pending:
            # waits of at most a second, between which Ctrl-C and SIGTERM are answered
            try:
                done, pending = distributed.wait(pending, timeout=1.0,
                                                 return_when="FIRST_COMPLETED")
            except (TimeoutError, distributed.TimeoutError):
                continue
            for future in done:
                k = index[future.key]
                results[k] = future.result()
                if bar is not None:
                    bar.update(parts[k][1] - parts[k][0])
    finally:
        if bar is not None:
            bar.close()
        for f in futures + futures_shared:
            f.release()
    return results
