"""The one progress bar of every long computation (tqdm, the optional extra ``progress``)."""
import sys

__all__ = ["progress_bar"]


def progress_bar(progress, total, initial, desc, unit="batch"):
    """A tqdm bar on stderr (None without tqdm, or when ``progress`` is false, or, for
    None, when stderr is not a terminal)."""
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False,
                file=sys.stderr, dynamic_ncols=True)
