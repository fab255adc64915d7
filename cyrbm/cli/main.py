"""The ``cyrbm`` command: one parse, one dispatch table, one-sentence errors, and the
exit statuses (1 an error, 2 a usage error, 130 Ctrl-C, 143 SIGTERM)."""
import os
import sys
import warnings

from cyrbm.cli.options import in_cli_words
from cyrbm.cli.parse import _explicit_options, _parse
from cyrbm.errors import CyrbmError, Terminated, stop_status, stop_word

# NumPy, SciPy, the kernels and docopt are imported when a command needs them, inside
# main(): the command starts fast, and Ctrl-C while they load is answered like any other.


COMMANDS = ("train", "info", "ais", "ratio", "logz", "dbn", "bound", "sample", "filters",
            "evaluate", "sweep")


def _handler(command):
    """The handler of ``command``, imported when it runs (so NumPy and the kernels load
    inside main()'s handling of Ctrl-C, and a command loads only what it needs)."""
    if command == "train":
        from cyrbm.cli.train import cmd_train
        return cmd_train
    if command == "info":
        from cyrbm.cli.info import cmd_info
        return cmd_info
    if command in ("dbn", "bound"):
        from cyrbm.cli.dbn import _dbn_command
        return _dbn_command(command)
    if command in ("sample", "filters"):
        from cyrbm.cli.pictures import cmd_filters, cmd_sample
        return cmd_sample if command == "sample" else cmd_filters
    if command == "sweep":
        from cyrbm.cli.sweep import cmd_sweep
        return cmd_sweep
    from cyrbm.cli.measure import _measure
    return _measure(command)


class _OutputLost(Exception):
    """Writing the command's standard output failed; ``args[0]`` is the OSError."""


class _Stdout:
    """``sys.stdout`` while a command runs: a failure to write it (a full disk, a closed
    pipe) is raised as :class:`_OutputLost`, told apart from the command's own files."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _OutputLost(exc) from None

    def flush(self):
        try:
            self._stream.flush()
        except OSError as exc:
            raise _OutputLost(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _drop_stdout(stream):
    """Point the file descriptor of ``stream`` at /dev/null, so that the text still
    buffered is not written (and fails again) when Python exits."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    os.dup2(null, fd)
    os.close(null)


def _run(argv):
    args, problem = _parse(argv)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    command = next(name for name in COMMANDS if args.get(name))
    try:
        if "__explicit__" not in args:
            args["__explicit__"] = _explicit_options(argv)
        with warnings.catch_warnings():
            # a warning is one sentence on stderr, not Python's file:line and category
            warnings.showwarning = lambda message, *_, **__: print(
                f"cyrbm {command}: warning: {message}", file=sys.stderr)
            return _handler(command)(args, sys.stdout)
    except BrokenPipeError:          # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except (CyrbmError, ValueError, OSError) as exc:
        print(f"cyrbm {command}: error: {in_cli_words(exc, command)}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"cyrbm {command}: error: this machine has not enough memory for the sizes "
              f"asked for; use smaller ones.", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(f"cyrbm {command}: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)


def _run_writing_stdout(argv):
    """``_run(argv)`` with a failure to write standard output (a full disk: one sentence
    and status 1; a closed pipe, as under `| head`: quietly) told apart from the
    command's own files."""
    real = sys.stdout
    sys.stdout = _Stdout(real)
    try:
        code = _run(argv)
        sys.stdout.flush()           # a failure to write it is told here, not at exit
        return code
    except _OutputLost as lost:
        _drop_stdout(real)
        exc = lost.args[0]
        if isinstance(exc, BrokenPipeError):
            return 0
        command = argv[0] if argv and argv[0] in COMMANDS else None
        prefix = f"cyrbm {command}" if command else "cyrbm"
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        print(f"{prefix}: error: cannot write the output: {reason}.", file=sys.stderr)
        return 1
    finally:
        sys.stdout = real


def _single_threaded_blas(environ=os.environ):
    """The command's heavy work runs in cyrbm's OpenMP kernels; NumPy's BLAS only does
    small products (the training monitor, starting states), for which its own threads
    cost far more than they give when other programs share the cores (a 16 x 784 x 500
    product: 50 ms on 2 BLAS threads against 0.4 ms on one).  So the command's BLAS is
    single-threaded unless the user set its threads.  Must run before NumPy loads."""
    if "OMP_NUM_THREADS" in environ:
        return
    for key in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        environ.setdefault(key, "1")


def _terminate(signum, frame):
    raise Terminated


def _on_sigterm():
    """SIGTERM raises Terminated, a KeyboardInterrupt: the command stops as on Ctrl-C
    (long computations check between pieces of about 0.1 s) and exits with 143.  The
    previous handler, to restore; None when SIGTERM cannot be handled here."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        return None
    return signal.signal(signal.SIGTERM, _terminate)


def main(argv=None):
    if "numpy" not in sys.modules:
        _single_threaded_blas()
    previous = None
    try:
        previous = _on_sigterm()
        return _run_writing_stdout(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt as exc:   # e.g. while NumPy and the kernels are loading
        print(f"cyrbm: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)
    finally:
        if previous is not None:
            import signal
            signal.signal(signal.SIGTERM, previous)
