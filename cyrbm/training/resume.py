"""The one resume rule, for the Python API (``Trainer.fit(resume=True)``) and the command
line (``cyrbm train --resume``, ``cyrbm dbn --resume``).

A resume continues the run its checkpoint stopped: with the checkpoint's settings it
gives the same bits as the run never stopped.  Only the settings of CHANGEABLE may differ
from the checkpoint's: how far the run goes (``epochs``), the step (``learning_rate``,
``lr_decay``, ``momentum``, ``weight_decay``), the Gibbs sweeps per update (``k`` or its
ramp) and the monitored rows (``monitor_size``).  Each change is recorded in the training
history, in the record of the epoch in which it took effect, with the update from which
it applies (``changed``: setting, checkpoint's value, new value, update, epoch).  Any
other difference (``n_hidden``, the method, the batch size, the seed, the dtype, the
sampler's chains or temperatures, the unit type, ...) is refused in one sentence naming
the setting, the checkpoint's value and the value given: nothing is replaced silently.
"""
__all__ = ["CHANGEABLE", "resume_conflict", "resume_changes", "describe_change"]

#: the settings a resume may change, each change recorded in the history
CHANGEABLE = ("epochs", "k", "learning_rate", "lr_decay", "momentum", "weight_decay",
              "monitor_size")
#: settings written only when they are not their default: absent means the default
_ONLY_WHEN_SET = {"visible": "binary", "learn_sigma": False, "lateral": None,
                  "track_logz": None}
#: derived from others (the k ramp's span is the checkpoint's, see Trainer.k_span)
_DERIVED = ("k_span",)


def _api_words(name, value):
    return f"{name}={value!r}"


def _same(key, was, now):
    """Equal settings (as Trainer.settings() writes them: k is 5 or "1:25")."""
    return was == now and isinstance(was, bool) == isinstance(now, bool)


def resume_conflict(saved, given, path, words=_api_words, name_of=None):
    """The sentence refusing a resume from checkpoint ``path``, whose run had the settings
    ``saved``, with the settings ``given`` (both as ``Trainer.settings()``), or None
    when they differ only in CHANGEABLE.  ``words(name, value)`` shows a setting (the
    API: ``n_hidden=25``; the command line: ``--hidden 25``), ``name_of`` maps a
    setting to that name (default: the setting's own).  A setting missing from an older
    file is not compared, unless it is written only when not its default."""
    name_of = name_of or {}
    for key in list(given) + [key for key in saved if key not in given]:
        if key in CHANGEABLE or key in _DERIVED:
            continue
        if key not in saved and key not in _ONLY_WHEN_SET:
            continue
        default = _ONLY_WHEN_SET.get(key)
        was, now = saved.get(key, default), given.get(key, default)
        if not _same(key, was, now):
            name = name_of.get(key, key)
            changeable = ", ".join(name_of.get(k, k) for k in CHANGEABLE)
            return (f"cannot resume from the checkpoint '{path}': it was made with "
                    f"{words(name, was)}, not {words(name, now)}, and a resume may change "
                    f"only {changeable} (give {words(name, was)}, or train afresh).")
    return None


def resume_changes(saved, given, state):
    """The changes of CHANGEABLE settings from ``saved`` to ``given``, as history
    entries at the checkpoint's position in ``state`` (update, epoch, batch)."""
    changes = []
    for key in CHANGEABLE:
        if key in saved and key in given and not _same(key, saved[key], given[key]):
            changes.append({"setting": key, "checkpoint": saved[key], "now": given[key],
                            "update": state["n_updates"], "epoch": state["epoch"] + 1,
                            "batch": state["batch"]})
    return changes


def describe_change(change):
    """A change recorded in the history, in words (the command line's epoch lines)."""
    return (f"{change['setting']} changed on resume from {change['checkpoint']!r} to "
            f"{change['now']!r} after update {change['update']}")
