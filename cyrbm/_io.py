"""Atomic .npz writing and careful .npz reading for model and checkpoint files."""
import json
import os
import tempfile
import zipfile
import zlib

import numpy as np

from cyrbm.errors import ModelFileError, OutputError


def check_writable(path):
    """Fail early, with one sentence, if ``path`` cannot be written (before any work)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise OutputError(f"cannot write '{path}': it is a directory.")
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write '{path}': the directory '{directory}' does not exist.")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".cyrbm-", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write '{path}': {exc.strerror or exc} in '{directory}'.") from None
    os.close(fd)
    os.unlink(tmp)


def atomic_savez(path, arrays, *, compress=False):
    """Write ``arrays`` (name -> array) as an .npz at ``path`` atomically.

    The data go to a temporary file in the same directory, are flushed to disk, and the
    file is renamed over ``path``: a reader (or a crash) never sees a half-written file.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".cyrbm-", suffix=".npz.tmp")
    except OSError as exc:
        raise OutputError(f"cannot write '{path}': {exc.strerror or exc}.") from None
    try:
        with os.fdopen(fd, "wb") as f:
            (np.savez_compressed if compress else np.savez)(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())      # mkstemp makes 0600; give the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write '{path}': {exc.strerror or exc}.") from None
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_npz(path, what="model file"):
    """All arrays of an .npz as a dict, or a ModelFileError naming what is wrong."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"no such {what} '{path}'.")
    if os.path.isdir(path):
        raise ModelFileError(f"{what} '{path}' is a directory.")
    try:
        with np.load(path, allow_pickle=False) as z:
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError("not an npz archive")
            return {name: z[name] for name in z.files}
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError, zlib.error) as exc:
        raise ModelFileError(
            f"{what} '{path}' is not a readable .npz file (it is truncated, corrupt or "
            f"of another format: {type(exc).__name__})."
        ) from None


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
    except (ValueError, TypeError, UnicodeDecodeError):
        raise ModelFileError(f"{what} '{path}' has a 'meta' entry that is not valid JSON.") from None
    if not isinstance(meta, dict):
        raise ModelFileError(f"{what} '{path}' has a 'meta' entry that is not a JSON object.")
    return meta
