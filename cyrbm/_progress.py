"""The one progress bar of every long computation (tqdm, the optional extra ``progress``)."""
import sys

__all__ = ["progress_bar", "schedule_pieces"]


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


def schedule_pieces(run, k0, k1, progress, most, desc):
    """``run(k, k_next)`` over the steps k0 <= k < k1 of an annealing schedule, in
    pieces (cyrbm._threads.pieces, at most ``most`` steps): the bar (one tick a beta
    after step 0) moves and Ctrl-C is answered between them; ``run`` must give the one
    call's bits whatever the cuts."""
    from cyrbm._threads import pieces
    bar = progress_bar(progress, k1 - max(k0, 1), 0, desc, unit="beta")
    try:
        for k, k_next in pieces(k0, k1, most=most):
            run(k, k_next)
            if bar is not None:
                bar.update(k_next - max(k, 1))
    finally:
        if bar is not None:
            bar.close()
