"""The ``cyrbm`` command for tests: installed, in a process of its own, or in-process
(``run``), and the helpers of the command-line tests."""
import os
import sys

import numpy as np

import cyrbm
from cyrbm import RBM


def cyrbm_command():
    """The console script beside this Python, else ``python -m cyrbm.cli``."""
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "cyrbm.cli"]


def child_env():
    """The environment of a child command: it imports the cyrbm these tests import (the
    installed package, or a built source tree on PYTHONPATH), never an unbuilt tree."""
    env = dict(os.environ)
    where = os.path.dirname(os.path.dirname(os.path.abspath(cyrbm.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (where, env.get("PYTHONPATH")) if p)
    return env


def run(args, capsys):
    """``cyrbm args`` in this process (cyrbm.cli.main): (status, stdout, stderr)."""
    from cyrbm.cli import main
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err, needle=None):
    """stderr is one sentence starting 'cyrbm', with ``needle`` in it, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cyrbm") and "Traceback" not in err, err
    if needle is not None:
        assert needle in lines[0], err
    return lines[0]


def small_model(path, n_visible=64, n_hidden=6, seed=0):
    rng = np.random.default_rng(seed)
    RBM(rng.normal(0, 0.1, (n_visible, n_hidden)), np.zeros(n_visible), np.zeros(n_hidden)).save(path)
    return path


def interrupted_fit(trainer, data, epoch=1):
    """``trainer.fit(data)`` stopped by a SIGINT at the end of ``epoch`` (its callback),
    as Ctrl-C would stop it: the checkpoint of that moment is left."""
    import signal

    def interrupt(record):
        if record["epoch"] == epoch:
            os.kill(os.getpid(), signal.SIGINT)
    trainer.callback = interrupt
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            trainer.fit(data)
        except KeyboardInterrupt:
            return
        raise AssertionError("the run was not interrupted")
    finally:
        signal.signal(signal.SIGINT, previous)

