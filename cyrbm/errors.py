"""Exceptions raised by cyrbm.

Every error a user can cause (bad data, a bad model file, a run that diverges) is a
subclass of :class:`CyrbmError` whose message is one plain sentence naming the problem.
The command line prints that sentence and exits non-zero; it never shows a traceback.
"""


class CyrbmError(Exception):
    """Base class of every error cyrbm reports to a user.

    The message is in the Python API's words.  ``parameters``: the Python parameter names
    (``burn_in``) it uses; ``hints``: the keys of the hints it gives
    (cyrbm._validation.HINTS), so that the command line can say them as its options
    (cyrbm._validation.worded sets them, on any exception).
    """
    parameters = ()
    hints = ()


class DataError(CyrbmError, ValueError):
    """Input data that cyrbm cannot use: wrong shape, not binary, NaN, empty, unreadable."""


class ModelFileError(CyrbmError, ValueError):
    """A model or checkpoint file that is missing, corrupt, or of an unknown format."""


class ModelMismatchError(CyrbmError, ValueError):
    """Data, models or arguments whose sizes do not fit together."""


class TrainingDiverged(CyrbmError, FloatingPointError):
    """Training produced non-finite parameters; the last good checkpoint is kept."""


class ModelTypeError(CyrbmError, TypeError):
    """A model of a kind the operation does not take; the sentence says which it takes."""


class OutputError(CyrbmError, OSError):
    """An output file that cannot be written."""


class SizeError(CyrbmError, ValueError):
    """A size (units, rows, runs, betas) whose arrays cannot fit in this machine's memory."""


class AnnealingError(CyrbmError, ValueError):
    """A request the annealer cannot carry out: too few runs, a model too big to sum."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the command line's handler (cyrbm.cli.main) wherever Ctrl-C's
    KeyboardInterrupt would be, and handled the same way: the command stops cleanly,
    keeps its checkpoint, and exits with status 143 (128 + 15, the shell's convention)
    instead of 130."""


def stop_status(exc):
    """The exit status of a command stopped by ``exc``: 143 for SIGTERM, 130 for Ctrl-C."""
    return 143 if isinstance(exc, Terminated) else 130


def stop_word(exc):
    """How a stopped command says it stopped: "terminated (SIGTERM)" or "interrupted"."""
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
