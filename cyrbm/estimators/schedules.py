"""Annealing schedules: the inverse temperatures 0 = beta_0 < ... < beta_K = 1 of AIS and
RAISE (SM08 Sec. 3, Eq. 13): the paper's 14,500, ``linear:K``, a text file, or an array.
(Schedules tuned by a pilot run, ``adaptive:K``, are :func:`cyrbm.estimators.evaluation.adaptive_schedule`.)
"""
import os

import numpy as np

from cyrbm._validation import check_memory
from cyrbm.errors import CyrbmError

__all__ = ["ScheduleError", "make_schedule", "schedule_count"]


class ScheduleError(CyrbmError, ValueError):
    """An annealing schedule that is not a finite, strictly increasing list from 0 to 1."""


def make_schedule(spec):
    """The inverse temperatures beta_0 = 0 < beta_1 < ... < beta_K = 1 of an AIS run.

    Parameters
    ----------
    spec : str or array_like
        ``"paper"``: SM08 Sec. 5.1, 500 betas spaced uniformly in [0, 0.5), 4,000 in
        [0.5, 0.9) and 10,000 in [0.9, 1] (14,500 in all, the last exactly 1);
        ``"linear:K"``: K betas spaced uniformly from 0 to 1 (K >= 2);
        the name of a text file with one beta per line (or whitespace-separated);
        or an array of betas.

    Returns
    -------
    betas : float64 array
        Checked: finite, strictly increasing, first 0 and last 1.
    """
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if text == "paper":
            betas = np.concatenate([np.linspace(0.0, 0.5, 500, endpoint=False),
                                    np.linspace(0.5, 0.9, 4000, endpoint=False),
                                    np.linspace(0.9, 1.0, 10000)])
        elif text.startswith("linear:"):
            k = schedule_count(text)
            check_memory(16 * k, f"schedule 'linear:{k}'", "use fewer betas")
            betas = np.linspace(0.0, 1.0, k)
        elif os.path.isfile(text):
            betas, lines = _read_schedule_file(text)
            return _check_schedule(betas, text, lines)
        elif text.startswith("adaptive:"):
            raise ScheduleError(f"schedule {text!r} (betas tuned by a pilot run) is for "
                                f"'cyrbm evaluate' (evaluation.adaptive_schedule); here give "
                                f"'paper', 'linear:K' or a file of betas (such as one written "
                                f"by evaluate --save-schedule).")
        else:
            raise ScheduleError(f"schedule must be 'paper', 'linear:K', a file of betas or an "
                                f"array, not {text!r} (no such file).")
    else:
        try:
            betas = np.asarray(spec, dtype=np.float64)
        except (TypeError, ValueError):
            raise ScheduleError("schedule must be 'paper', 'linear:K', a file of betas or an "
                                "array of numbers.") from None
        if betas.ndim != 1:
            raise ScheduleError(f"a schedule must be a 1-D list of betas, not an array of shape "
                                f"{betas.shape}.")
    return _check_schedule(betas)


def schedule_count(spec):
    """K of a schedule "name:K" ("linear:K", "adaptive:K"): a whole number >= 2."""
    name, count = spec.split(":", 1)
    try:
        k = int(count)
    except ValueError:
        raise ScheduleError(f"schedule '{name}:K' needs a whole number K, not {count!r}.") from None
    if k < 2:
        raise ScheduleError(f"schedule '{name}:K' needs K >= 2 betas, not {k}.")
    return k


def _read_schedule_file(path):
    """(betas, the file's line number of each) from a text file of numbers separated by
    white space, '#' starting a comment."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ScheduleError(f"schedule file '{path}' is not a list of numbers (it is not "
                            f"UTF-8 text).") from None
    except OSError as exc:
        raise ScheduleError(f"cannot read schedule file '{path}': "
                            f"{exc.strerror or exc}.") from None
    betas, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        for field in line.split("#", 1)[0].split():
            try:
                betas.append(float(field))
            except ValueError:
                raise ScheduleError(f"schedule file '{path}' is not a list of numbers: "
                                    f"it holds {field!r} on line {number}.") from None
            lines.append(number)
    if not betas:
        raise ScheduleError(f"schedule file '{path}' holds no betas.")
    return np.array(betas, dtype=np.float64), lines


def _check_schedule(betas, path=None, lines=None):
    """``betas`` checked.  A message names a value by its entry (0-based), or, for the
    betas read from the schedule file ``path``, by the file's line ``lines[k]``."""
    def name(k, short=False):
        if path is None:
            return f"entry {k}" if short else f"schedule entry {k}"
        return f"line {lines[k]}" if short else f"line {lines[k]} of schedule file '{path}'"

    betas = np.ascontiguousarray(betas, dtype=np.float64)
    if betas.size < 2:
        where = "" if path is None else f" (schedule file '{path}')"
        raise ScheduleError(f"a schedule needs at least two betas (0 and 1), not "
                            f"{betas.size}{where}.")
    if not np.all(np.isfinite(betas)):
        k = int(np.flatnonzero(~np.isfinite(betas))[0])
        raise ScheduleError(f"{name(k)} is not a finite number ({float(betas[k])}).")
    if betas[0] != 0.0:
        raise ScheduleError(f"a schedule must start at beta = 0 ({name(0)}), not "
                            f"{float(betas[0])!r}.")
    if betas[-1] != 1.0:
        raise ScheduleError(f"a schedule must end at beta = 1 ({name(betas.size - 1)}), "
                            f"not {float(betas[-1])!r}.")
    steps = np.diff(betas)
    if np.any(steps <= 0):
        k = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise ScheduleError(f"a schedule must be strictly increasing, but {name(k)} "
                            f"({float(betas[k])!r}) is not above {name(k - 1, True)} "
                            f"({float(betas[k - 1])!r}).")
    return betas
