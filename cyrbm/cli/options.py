"""Options shared by the commands: whole numbers, reals, threads, data and model paths,
and the printing of numbers and intervals.  Every bad value is a UsageError of one sentence."""
import contextlib
import math
import os
import sys

from cyrbm.errors import CyrbmError


# NumPy, SciPy, the kernels and docopt are imported when a command needs them, inside
# main(): the command starts fast, and Ctrl-C while they load is answered like any other.


class UsageError(CyrbmError):
    """A command-line value that does not parse."""


# ------------------------------------------------------------------------ values
def _whole(args, key, minimum=None, *, optional=False, what=""):
    """An option's value as a whole number (``1e6`` spelled so is accepted)."""
    value = args[key]
    if value is None:
        if optional:
            return None
        raise UsageError(f"{key} needs a value.")
    text = str(value).strip()
    try:
        result = int(text, 10)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise UsageError(f"{key} must be a whole number, not {value!r}.") from None
        result = int(as_float)
    if minimum is not None and result < minimum:
        raise UsageError(f"{key} must be at least {minimum}{what}, not {result}.")
    return result


def _real(args, key, *, low=None, high=None, low_open=False, high_open=False, optional=False):
    """An option's value as a finite number within the given bounds."""
    value = args[key]
    if value is None:
        if optional:
            return None
        raise UsageError(f"{key} needs a value.")
    try:
        result = float(value)
    except ValueError:
        raise UsageError(f"{key} must be a number, not {value!r}.") from None
    if not math.isfinite(result):
        raise UsageError(f"{key} must be a finite number, not {value!r}.")
    bad_low = low is not None and (result <= low if low_open else result < low)
    bad_high = high is not None and (result >= high if high_open else result > high)
    if bad_low or bad_high:
        parts = []
        if low is not None:
            parts.append(f"{'above' if low_open else 'at least'} {low:g}")
        if high is not None:
            parts.append(f"{'below' if high_open else 'at most'} {high:g}")
        raise UsageError(f"{key} must be {' and '.join(parts)}, not {value}.")
    return result


def binarize_threshold(args):
    """--threshold when given (load_data refuses it without --binarize threshold), else
    None: its [default: 0.5] is load_data's."""
    return _real(args, "--threshold") if "--threshold" in args["__explicit__"] else None


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def scheduler_client(args):
    """--scheduler ADDRESS: a ``distributed.Client`` of that scheduler for the command's
    duration (closed after), or None without the option."""
    address = args.get("--scheduler")
    if not address:
        yield None
        return
    from cyrbm.distributed import connect
    client = connect(address)
    try:
        yield client
    finally:
        client.close()


def parse_threads(raw):
    """--threads: None or 0 for automatic (by the size of the work), else a number of
    threads, capped at the cores this process may use (with a note on stderr)."""
    if raw is None:
        return None
    value = _whole({"--threads": raw}, "--threads", 0, what=" (0: chosen by the size of the work)")
    if value == 0:
        return None
    cores = _cores()
    if value > cores:
        print(f"cyrbm: note: --threads {value} is more than the {cores} cores here; "
              f"using {cores}.", file=sys.stderr)
        return cores
    return value


def default_checkpoint(model_path):
    root, ext = os.path.splitext(os.fspath(model_path))
    return root + ".ckpt" + (ext or ".npz")


def _data_file(source):
    """The file behind a DATA argument, or None for a bundled data set."""
    from cyrbm.data.datasets import bundled_datasets
    if source is None or source in bundled_datasets():
        return None
    if os.path.exists(source):
        return source
    prefix, colon, _ = source.rpartition(":")
    if colon and os.path.isfile(prefix):
        return prefix
    return None


def load_model(path, arrays=None):
    """The model in the model file ``path`` (its ``arrays`` when read already): an RBM,
    GaussianRBM or SRBM as its meta says; anything else refused in one sentence."""
    from cyrbm import _io
    from cyrbm.models.kinds import read_model
    return read_model(_io.read_npz(path) if arrays is None else arrays, path)


# --------------------------------------------------------------------------- info
def _num(x, fmt=".4f"):
    """A number formatted, or shown as it is when it is not one (a crafted file)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return format(x, fmt)
    return str(x)


# ----------------------------------------------------------------- ais, ratio, logz
def _end(x, sign):
    """An interval end: a number, or +-inf (JSON null) when the interval is unbounded."""
    return f"{sign}inf" if x is None or not math.isfinite(x) else f"{x:.4f}"


def _interval(pair):
    if pair is None:
        return "[n/a]"
    lo, hi = pair
    return f"[{_end(lo, '-')}, {_end(hi, '+')}]"


#: The hints of cyrbm._validation.HINTS in the command line's words: those of the
#: commands that read data with --binarize ("cli") and of the measuring commands (ais,
#: ratio, logz, bound, evaluate: "cli-measure"), which take 0/1 data only.
CLI_HINTS = {
    "binarize_file": {
        "cli": "use --binarize threshold or --binarize stochastic",
        "cli-measure": "these commands take 0/1 data only; binarize it first"},
    "binarize_array": {
        "cli": "binarize it first with --binarize threshold or --binarize stochastic",
        "cli-measure": "these commands take 0/1 data only; binarize it first"},
    "exact_too_big": {"cli": "use 'cyrbm ais' (an AIS estimate) instead"},
    "start_gibbs": {"cli": "use --start gibbs"},
    "dbn_finished": {"cli": "list more sizes in --layers to add a layer on top, or train "
                            "afresh without --resume"},
    "dbn_no_checkpoint": {"cli": "train without --resume first"},
    "threshold_alone": {"cli": "--threshold applies to --binarize threshold only"},
}
#: the commands whose data options include --binarize
_BINARIZING = ("train", "info", "sample", "filters", "dbn")


def option_of(parameter):
    """The command-line option of a Python parameter: ``burn_in`` -> ``--burn-in``."""
    return "--" + parameter.replace("_", "-")


def in_cli_words(exc, command):
    """The first sentence of ``exc``'s message with the Python parameters and hints it
    names (``exc.parameters``, ``exc.hints``: cyrbm._validation.worded) said as the
    options and hints of ``command``."""
    import re
    from cyrbm._validation import HINTS
    text = _one_sentence(exc)
    interface = "cli" if command in _BINARIZING else "cli-measure"
    for key in getattr(exc, "hints", ()):
        words = CLI_HINTS[key]
        text = text.replace(HINTS[key], words.get(interface, words["cli"]))
    start = 0
    for name in getattr(exc, "parameters", ()):      # in the order the message uses them
        found = re.compile(rf"(?<![-\w]){re.escape(name)}(?!\w)").search(text, start)
        if found is not None:
            text = text[:found.start()] + option_of(name) + text[found.end():]
            start = found.start() + len(option_of(name))
    return text


def _one_sentence(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
