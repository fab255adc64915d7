"""Atomic file writing (models, checkpoints, images), the check of output paths before
any work (:func:`check_outputs`), and careful .npz reading.

Temporary files are named ``.cyrbm-<pid>-<random>.npz.tmp`` (``.png.tmp``) in the directory of the file
being written, so one left behind by a process that was killed (SIGKILL, power loss) is
recognisably stale: its process no longer runs.  Every write removes the stale ones it
finds there.
"""
import json
import os
import re
import stat
import tempfile
import tokenize
import zipfile
import zlib

import numpy as np

from cyrbm.errors import ModelFileError, OutputError

_TEMP_PREFIX = ".cyrbm-"
_TEMP_RE = re.compile(r"^\.cyrbm-(\d+)-[^/]*\.tmp$")


def is_read_only(path):
    """True if ``path`` exists and its owner may not write it (no write permission bit
    for anyone, or no write access for this user).  Checked by mode bits as well as
    ``os.access``: root may write anything, but a 0444 file still says "keep me"."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    return (st.st_mode & 0o222) == 0 or not os.access(path, os.W_OK)


def same_file(a, b):
    """True if paths ``a`` and ``b`` name the same existing file (links included)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError, TypeError):
        return False


#: what each kind of output holds: (file-name endings it may have, its name in a message);
#: a text file may have any ending but those of the binary kinds
OUTPUT_KINDS = {
    "npz": ((".npz",), "an .npz file"),
    "png": ((".png",), "a PNG image"),
    "text": (None, "a text file"),
}
_BINARY_ENDINGS = (".npz", ".npy", ".png", ".jpg", ".jpeg", ".gif", ".pdf", ".gz", ".zip",
                   ".pkl", ".pickle")


def _special_kind(mode):
    """What a file of this ``st_mode`` is when it is not a regular file, else None."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _refuse(name, path, problem):
    raise OutputError(f"{name} '{path}' {problem}")


def check_outputs(outputs, inputs=()):
    """Refuse, before any work, an output that would destroy a file or cannot be written.

    Every command that writes calls it once with all its inputs and all the files it
    will write, derived ones included (a checkpoint named after -o, a DBN's per-layer
    files).  Refused, each in one sentence naming the output and its path: a path that is
    one of the inputs (through a symlink or a hard link too: same device and inode); a
    directory, device, FIFO or socket; an ending that does not fit what will be written;
    two outputs that are one file; a read-only file; a directory that does not exist, is
    not one, or cannot be written (tried by creating a temporary file there, since
    permission bits do not stop root).

    Parameters
    ----------
    outputs : iterable of (name, path, kind)
        ``name`` as the user knows it (an option such as ``--plot``, or "the checkpoint
        named after -o"); ``path`` (None: not written); ``kind`` one of
        :data:`OUTPUT_KINDS` ("npz", "png", "text"), or None for any.
    inputs : iterable of (what, path)
        The files the command reads, ``what`` naming each ("the model file MODEL");
        None paths and files that do not exist are passed over.

    Raises
    ------
    OutputError
    """
    outputs = [(name, os.fspath(path), kind) for name, path, kind in outputs if path is not None]
    inputs = [(what, os.fspath(path)) for what, path in inputs
              if path is not None and os.path.exists(path)]
    seen = []
    for name, path, kind in outputs:
        if not path or "\0" in path:
            _refuse(name, path, "is not a file name.")
        try:
            st = os.stat(path)
        except OSError:
            st = None
        for what, source in inputs:
            if same_file(path, source):
                _refuse(name, path, f"is {what}, which this command reads; name another file.")
        special = None if st is None else _special_kind(st.st_mode)
        if special is not None:
            _refuse(name, path, f"is {special}, not a regular file; name a file to write.")
        real = os.path.realpath(path)
        for other_name, other, other_real in seen:
            if real == other_real or same_file(path, other):
                raise OutputError(f"{other_name} '{other}' and {name} '{path}' are the same "
                                  f"file; name different files.")
        seen.append((name, path, real))
        if kind is not None:
            endings, holds = OUTPUT_KINDS[kind]
            lower = path.lower()
            if endings is not None and not lower.endswith(endings):
                _refuse(name, path, f"will hold {holds}: its name must end in "
                                    f"{' or '.join(endings)}.")
            if endings is None and lower.endswith(_BINARY_ENDINGS):
                _refuse(name, path, f"will hold {holds}, not what its ending "
                                    f"'{os.path.splitext(lower)[1]}' says; name a .txt file.")
        if is_read_only(path):
            _refuse(name, path, "is read-only (make it writable, or write elsewhere).")
        _check_directory(name, path)


def _check_directory(name, path):
    """The directory of ``path`` exists and a file can be created in it (tried)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(directory):
        _refuse(name, path, f"cannot be written: the directory '{directory}' does not exist.")
    if not os.path.isdir(directory):
        _refuse(name, path, f"cannot be written: '{directory}' is not a directory.")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{_TEMP_PREFIX}{os.getpid()}-",
                                   suffix=".tmp")
    except OSError as exc:
        _refuse(name, path, f"cannot be written: the directory '{directory}' cannot be "
                            f"written ({exc.strerror or exc}).")
    os.close(fd)
    os.unlink(tmp)


def remove_stale_temporaries(directory):
    """Delete the temporary files of cyrbm processes that no longer run from
    ``directory``; returns their names."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _TEMP_RE.match(name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(name)
        except OSError:
            pass
    return removed


def _process_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True         # exists (another user's), or cannot tell: keep the file
    return True


def atomic_savez(path, arrays, *, compress=False):
    """Write ``arrays`` (name -> array) as an .npz at ``path`` atomically (see
    :func:`atomic_write`)."""
    atomic_write(path, lambda f: (np.savez_compressed if compress else np.savez)(f, **arrays),
                 ".npz.tmp")


def atomic_write(path, write, suffix=".tmp"):
    """Create the file ``path`` atomically: ``write(f)`` fills a binary file object.

    Every file cyrbm writes is written here (tests/test_outputs.py enumerates the
    package's writes to hold it), and every write passes the one output check first
    (:func:`check_outputs`: a directory, device, FIFO or socket, a read-only file or an
    unwritable directory is refused in one sentence; a command also checks its outputs
    against its inputs before any work).  The data go to a temporary file in the same
    directory, are flushed to disk, and the file is renamed over ``path``: a reader (or
    a crash) never sees a half-written file.  A replaced file keeps its permission bits.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    check_outputs([("the file", path, None)])
    remove_stale_temporaries(directory)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{_TEMP_PREFIX}{os.getpid()}-",
                                   suffix=suffix)
    except OSError as exc:
        raise OutputError(f"cannot write '{path}': {exc.strerror or exc}.") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)            # mkstemp makes 0600; give the usual (or kept) mode
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write '{path}': {exc.strerror or exc}.") from None
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    """Make the rename itself durable (where the platform allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")

#: the sentence's end for an array of Python objects (NumPy keeps them pickled)
PICKLED = "holds pickled Python objects, which cyrbm does not load (unpickling can run any code)"

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"), (b"%PDF", "a PDF document"), (b"\x1f\x8b", "a gzip file"),
    (b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "an empty zip archive"),
    (NPY_MAGIC, "a NumPy .npy file"), (b"\x89HDF", "an HDF5 file"),
    (b"\x7fELF", "a program"),
)


def read_head(path, size=512):
    """The first ``size`` bytes of the file ``path`` (b"" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def looks_like(head):
    """What the first bytes ``head`` of a file look like, for a message ("a PNG image",
    "text", "a Python pickle", ...), or None when nothing is recognised."""
    if not head:
        return "an empty file"
    for magic, name in _SIGNATURES:
        if head.startswith(magic):
            return name
    if len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5:   # pickle protocols 2-5
        return "a Python pickle"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:        # not just a character cut at the end
            return None
        text = head[:exc.start].decode("utf-8")
    if text and all(c.isprintable() or c in "\t\r\n\f\v" for c in text):
        return "text"
    return None


def read_npz(path, what="model file"):
    """All arrays of an .npz as a dict, or a ModelFileError naming what is wrong."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"no such {what} '{path}'.")
    if os.path.isdir(path):
        raise ModelFileError(f"{what} '{path}' is a directory.")
    head = read_head(path)
    if not head and os.path.isfile(path) and os.path.getsize(path) == 0:
        raise ModelFileError(f"{what} '{path}' is empty.")
    if head and not head.startswith(ZIP_MAGICS) and not head.startswith(NPY_MAGIC):
        kind = looks_like(head)
        if kind is not None:
            raise ModelFileError(f"{what} '{path}' is not a readable .npz file (it looks like "
                                 f"{kind}).")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError, zlib.error,
            NotImplementedError, RuntimeError, OverflowError, MemoryError, SyntaxError,
            tokenize.TokenError, TypeError) as exc:
        raise _unreadable(path, what, exc) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        kind = (f"a single array of shape {loaded.shape} (an .npy file)"
                if isinstance(loaded, np.ndarray) else "not an .npz archive")
        raise ModelFileError(f"{what} '{path}' holds {kind}, not a model (.npz with W, "
                             f"vbias and hbias).")
    try:
        with loaded as z:
            return {name: z[name] for name in z.files}
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError, zlib.error,
            NotImplementedError, RuntimeError, OverflowError, MemoryError, TypeError,
            SyntaxError, tokenize.TokenError) as exc:
        raise _unreadable(path, what, exc) from None


def _unreadable(path, what, exc):
    if isinstance(exc, ValueError) and "pickle" in str(exc):
        return ModelFileError(f"{what} '{path}' {PICKLED}.")
    return ModelFileError(
        f"{what} '{path}' is not a readable .npz file (it is truncated, corrupt or "
        f"of another format: {type(exc).__name__}).")


def read_meta(path):
    """The parsed 'meta' entry of an .npz file without reading its other arrays, or None
    (no such file, not an .npz, no meta or not a JSON object)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if not isinstance(z, np.lib.npyio.NpzFile) or "meta" not in z.files:
                return None
            meta = json.loads(z["meta"].item())
    except Exception:       # anything unreadable is simply "not ours"
        return None
    return meta if isinstance(meta, dict) else None


def meta_to_array(meta):
    """A dict as the 0-d unicode array stored under the key ``meta``."""
    return np.array(json.dumps(meta, sort_keys=True))


def meta_from_array(value, path, what="model file"):
    """Parse the JSON ``meta`` entry of a file (a 0-d string array)."""
    try:
        text = value.item() if isinstance(value, np.ndarray) else value
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        meta = json.loads(text)
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError):
        raise ModelFileError(f"{what} '{path}' has a 'meta' entry that is not valid JSON.") from None
    if not isinstance(meta, dict):
        raise ModelFileError(f"{what} '{path}' has a 'meta' entry that is not a JSON object.")
    return meta
