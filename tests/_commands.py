"""The installed ``cyrbm`` command, for tests that run it in a process of its own."""
import os
import sys

import cyrbm


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
