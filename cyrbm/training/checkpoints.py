"""Checkpoints of a training run: what a Trainer writes between epochs (and on Ctrl-C)
and reads back to resume, so that a resumed run continues bit for bit; the data's
fingerprint that catches a resume on other data; Ctrl-C and SIGTERM as a flag checked
between mini-batches.
"""
import os
import signal
import threading
import zlib

import numpy as np

from cyrbm import _io
from cyrbm.errors import ModelFileError, ModelMismatchError, Terminated
from cyrbm.training.resume import resume_changes, resume_conflict
from cyrbm.training.samplers import SAMPLERS

__all__ = ["save_checkpoint", "load_checkpoint", "checkpoint_info"]

_TRAINER_KEYS = ("trainer_vel_W", "trainer_vel_vbias", "trainer_vel_hbias",
                 "trainer_streams", "trainer_chains")


def save_checkpoint(trainer, state, fingerprint):
    """Write ``trainer``'s run ``state`` to its checkpoint file atomically: the model with
    its training record, the velocities, the streams, the sampler's and the tracker's
    arrays, and where the run stands (epoch, batch, updates, the data's fingerprint)."""
    if trainer.checkpoint is None:
        return
    model = state["model"]
    meta = {
        "training": trainer._training_record(state, (None, model.n_visible)),
        "checkpoint": {
            "epoch": state["epoch"], "batch": state["batch"],
            "n_updates": state["n_updates"], "epoch_seconds": state.get("epoch_seconds", 0.0),
            "data_fingerprint": fingerprint,
        },
    }
    if state.get("changes"):           # resume changes not yet in an epoch's record
        meta["checkpoint"]["changes"] = state["changes"]
    tracker = state.get("tracker")
    if tracker is not None and tracker.last is not None:
        meta["checkpoint"]["track"] = {**tracker.scalars(), "pending": state["track_pending"]}
    arrays = model.to_arrays(extra_meta=meta)
    arrays.update({"trainer_vel_W": state["vel_W"], "trainer_vel_vbias": state["vel_vbias"],
                   "trainer_vel_hbias": state["vel_hbias"], "trainer_streams": state["streams"]})
    if state["chains"] is not None:
        arrays["trainer_chains"] = state["chains"]
    if "vel_sigma" in state:
        arrays["trainer_vel_sigma"] = state["vel_sigma"]
    if "vel_L" in state:
        arrays["trainer_vel_L"] = state["vel_L"]
    sampler = SAMPLERS[trainer.method]
    arrays.update({f"trainer_{sampler.name}_{key}": state[sampler.name][key]
                   for key in sampler.keys + sampler.optional
                   if key in state.get(sampler.name, ())})
    if "track" in meta["checkpoint"]:
        arrays.update({f"trainer_track_{key}": a for key, a in tracker.arrays().items()})
    _io.atomic_savez(trainer.checkpoint, arrays)
    trainer._last_checkpoint_epoch = state["epoch"]

def load_checkpoint(trainer, n_visible, fingerprint, given=None):
    """The run state of ``trainer``'s checkpoint, checked against the data (its width and
    fingerprint) and the resume rule (cyrbm.training.resume: a setting outside
    CHANGEABLE that differs is refused, a change of one of CHANGEABLE is recorded in
    ``state["changes"]`` for the history); a ModelFileError or ModelMismatchError of
    one sentence otherwise.  ``given``: a model passed to fit with resume, refused (the
    checkpoint's model continues, so it would be ignored)."""
    if trainer.checkpoint is None:
        raise ValueError("resume needs a checkpoint path.")
    if given is not None:
        raise ValueError("resume=True continues the checkpoint's own model: give no model "
                         "with it (or start from the model without resume).")
    path = trainer.checkpoint
    if not os.path.exists(path):
        raise ModelFileError(f"cannot resume: no checkpoint '{path}' (train without resume first).")
    arrays = _io.read_npz(path, "checkpoint")
    model = trainer._model_class().from_arrays(arrays, path, what="checkpoint")
    info = model.meta.get("checkpoint")
    training = model.meta.get("training", {})
    if info is None or any(key not in arrays for key in _TRAINER_KEYS[:4]):
        raise ModelFileError(f"'{path}' is a model file without trainer state, not a checkpoint.")
    info = checkpoint_info(info, path)
    saved = training.get("settings", {})
    if model.n_visible != n_visible:
        raise ModelMismatchError(
            f"checkpoint '{path}' has {model.n_visible} visible units but the data have {n_visible} columns.")
    if info.get("data_fingerprint") != fingerprint:
        raise ModelMismatchError(f"checkpoint '{path}' was made on different training data.")
    settings = trainer.settings()
    conflict = resume_conflict({**saved, "n_hidden": model.n_hidden}, settings, path)
    if conflict is not None:
        raise ModelMismatchError(conflict)
    if info["epoch"] > trainer.epochs:
        raise ModelMismatchError(
            f"checkpoint '{path}' has already done {info['epoch']} epochs, more than "
            f"epochs={trainer.epochs}; resume with at least {info['epoch']} epochs.")
    span = saved.get("k_span", saved.get("epochs"))      # older files: the saved epochs
    trainer.k_span = span if isinstance(span, int) and not isinstance(span, bool) and span >= 1 \
        else trainer.epochs
    model = model.astype(trainer.dtype)
    state = {
        "model": model, "epoch": int(info["epoch"]), "batch": int(info["batch"]),
        "n_updates": int(info["n_updates"]), "epoch_seconds": float(info.get("epoch_seconds", 0.0)),
        "vel_W": np.ascontiguousarray(arrays["trainer_vel_W"], dtype=trainer.dtype),
        "vel_vbias": np.ascontiguousarray(arrays["trainer_vel_vbias"], dtype=trainer.dtype),
        "vel_hbias": np.ascontiguousarray(arrays["trainer_vel_hbias"], dtype=trainer.dtype),
        "streams": np.ascontiguousarray(arrays["trainer_streams"], dtype=np.uint64),
        "chains": (np.ascontiguousarray(arrays["trainer_chains"], dtype=model._state_dtype)
                   if SAMPLERS[trainer.method].keeps_chains else None),
        "history": list(training.get("history", [])),
    }
    pending = info.get("changes")
    state["changes"] = (list(pending) if isinstance(pending, list) else []) + resume_changes(
        saved, settings, state)
    SAMPLERS[trainer.method].restore(state, arrays, path)
    track = info.get("track")
    state["tracker"], state["track_state"], state["track_pending"] = None, None, []
    if isinstance(track, dict) and all(f"trainer_track_{key}" in arrays
                                       for key in ("W", "vbias", "hbias", "chains")):
        state["track_state"] = {**{key[len("trainer_track_"):]: np.array(a)
                                   for key, a in arrays.items()
                                   if key.startswith("trainer_track_")}, **track}
        state["track_pending"] = list(track.get("pending", []))
    if trainer.learn_sigma:
        if "trainer_vel_sigma" not in arrays:
            raise ModelFileError(f"checkpoint '{path}' was not made with learn_sigma, so "
                                 f"it cannot be resumed with it.")
        state["vel_sigma"] = np.ascontiguousarray(arrays["trainer_vel_sigma"], trainer.dtype)
    if trainer.lateral:
        if "trainer_vel_L" not in arrays:
            raise ModelFileError(f"checkpoint '{path}' lacks the velocity of L "
                                 f"(trainer_vel_L), so it cannot be resumed.")
        state["vel_L"] = np.ascontiguousarray(arrays["trainer_vel_L"], trainer.dtype)
    if state["batch"] > 0 and state["epoch"] >= trainer.epochs:
        raise ModelFileError(f"checkpoint '{path}' has an inconsistent position "
                             f"(epoch {state['epoch']}, batch {state['batch']}).")
    if state["vel_W"].shape != model.W.shape or state["streams"].shape != (trainer.batch_size, 4) or (
            SAMPLERS[trainer.method].keeps_chains and (state["chains"] is None
                                      or state["chains"].shape != (trainer.batch_size, n_visible))):
        raise ModelFileError(f"checkpoint '{path}' has trainer arrays of the wrong shape.")
    model.meta.pop("checkpoint", None)
    trainer._last_checkpoint_epoch = state["epoch"]
    return state


def checkpoint_info(info, path):
    """The 'checkpoint' record of a checkpoint's meta, checked: whole numbers epoch,
    batch and n_updates (>= 0), a number epoch_seconds; a ModelFileError otherwise."""
    if not isinstance(info, dict):
        raise ModelFileError(f"checkpoint '{path}' has a 'checkpoint' record that is not a JSON object.")
    out = dict(info)
    for key in ("epoch", "batch", "n_updates"):
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            what = "no" if key not in info else "an invalid"
            raise ModelFileError(f"checkpoint '{path}' has {what} '{key}' in its trainer state, "
                                 f"so it cannot be resumed.")
    seconds = info.get("epoch_seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ModelFileError(f"checkpoint '{path}' has an invalid 'epoch_seconds' in its trainer state.")
    out["epoch_seconds"] = float(seconds)
    return out


def _fingerprint(data):
    """A cheap checksum of the training data, so a resume on other data is caught."""
    if data.dtype != np.uint8:          # probabilities
        return f"{data.shape[0]}x{data.shape[1]}p:{zlib.crc32(data.tobytes()):08x}"
    # rows of a multiple of 8 bits pack the same bytes flat, 5 times faster than by rows
    packed = np.packbits(data.reshape(-1) if data.shape[1] % 8 == 0 else data, axis=-1)
    return f"{data.shape[0]}x{data.shape[1]}:{zlib.crc32(packed.tobytes()):08x}"


class _InterruptFlag:
    """Turn Ctrl-C into a flag checked between batches (so a checkpoint is consistent);
    SIGTERM too while the command line handles it (cyrbm.cli: raised as Terminated)."""

    def __init__(self):
        self.flag = False
        self._previous = None
        self._previous_term = None
        self.stop = KeyboardInterrupt

    def _handler(self, signum, frame):
        if signum == signal.SIGTERM:
            self.stop = Terminated
        if self.flag:           # a second Ctrl-C: stop at once
            raise self.stop
        self.flag = True

    def install(self):
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            if callable(signal.getsignal(signal.SIGTERM)):
                self._previous_term = signal.signal(signal.SIGTERM, self._handler)
            if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
                return      # e.g. a background job (`cyrbm train ... &`): leave it ignored
            self._previous = signal.signal(signal.SIGINT, self._handler)
        except (ValueError, OSError):
            self._previous = None

    def uninstall(self):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self._previous_term is not None:
            signal.signal(signal.SIGTERM, self._previous_term)
            self._previous_term = None
