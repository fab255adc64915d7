"""Exceptions raised by cyrbm.

Every error a user can cause (bad data, a bad model file, a run that diverges) is a
subclass of :class:`CyrbmError` whose message is one plain sentence naming the problem.
The command line prints that sentence and exits non-zero; it never shows a traceback.
"""


class CyrbmError(Exception):
    """Base class of every error cyrbm reports to a user."""


class DataError(CyrbmError, ValueError):
    """Input data that cyrbm cannot use: wrong shape, not binary, NaN, empty, unreadable."""


class ModelFileError(CyrbmError, ValueError):
    """A model or checkpoint file that is missing, corrupt, or of an unknown format."""


class ModelMismatchError(CyrbmError, ValueError):
    """Data, models or arguments whose sizes do not fit together."""


class TrainingDiverged(CyrbmError, FloatingPointError):
    """Training produced non-finite parameters; the last good checkpoint is kept."""


class OutputError(CyrbmError, OSError):
    """An output file that cannot be written."""


class SizeError(CyrbmError, ValueError):
    """A size (units, rows, runs, betas) whose arrays cannot fit in this machine's memory."""
