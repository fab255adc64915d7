"""Greedy layer-by-layer training of a DBN (Salakhutdinov & Murray 2008, Sec. 4.1).

1. Fit the bottom RBM to the data.
2. Freeze it and use samples h_1 ~ Q(h_1 | v) = p(h_1 | v, W_1) (SM08 Eq. 5) of the data
   as the data of the next RBM: maximizing the bound of Eq. 19 with W_1 frozen is
   training that RBM on them (Eq. 20).
3. Repeat for as many layers as wanted.

With ``layer_input="probs"`` each layer above the first is trained on the probabilities
Q(h_l = 1 | .) instead of samples (the option SM08 Sec. 4.1 mentions): the up pass is
then mean-field (layer l's probabilities given layer l-1's), and the Trainer takes the
positive phase's expectation under them (``Trainer.fit(..., probabilities=True)``).

With ``visible="gaussian"`` the bottom layer is a :class:`cyrbm.models.gaussian.GaussianRBM`
trained by ``Trainer(visible="gaussian")`` on real data (MS09 Sec. 5.2), and the layers
above it on samples or probabilities of its Q(h_1 | v) = sigma(c + W^T (v / sigma)).

A new layer may start as the transpose of the one below (``init_transpose``; it then
has as many hidden units as the layer below has visible ones): the DBN's p(v) is then
exactly the lower model's and Q its true posterior, so the bound starts at the lower
model's log-likelihood and training the new layer can only raise it (SM08 Sec. 5.2).
"""
import os

import numpy as np

from cyrbm import _io
from cyrbm._random import seed_sequence
from cyrbm._validation import check_binary, check_real, hint, worded
from cyrbm.errors import ModelFileError, ModelMismatchError
from cyrbm.models.dbn import DBN
from cyrbm.models.kinds import model_class
from cyrbm.models.srbm import SRBM
from cyrbm.training.checkpoints import _fingerprint
from cyrbm.training.trainer import Trainer

__all__ = ["train_dbn", "layer_checkpoint", "progress_file", "up_pass", "resume_layers"]


def _stem(checkpoint):
    root = os.fspath(checkpoint)
    for ext in (".ckpt.npz", ".npz"):
        if root.endswith(ext):
            return root[: -len(ext)]
    return root


def layer_checkpoint(checkpoint, layer):
    """The Trainer checkpoint of ``layer``: ``X.ckpt.npz`` -> ``X.layer<l>.ckpt.npz``."""
    return f"{_stem(checkpoint)}.layer{layer}.ckpt.npz"


def progress_file(checkpoint):
    """The DBN file of the layers finished so far: ``X.ckpt.npz`` -> ``X.done.npz``."""
    return f"{_stem(checkpoint)}.done.npz"


def whitening_file(checkpoint):
    """The whitening a DBN run applies to its data (``cyrbm dbn --whiten``), kept for a
    resume: ``X.ckpt.npz`` -> ``X.whitening.npz``."""
    return f"{_stem(checkpoint)}.whitening.npz"


def up_pass(rbm, data, *, mode="sample", seed=0, layer=0):
    """The data of the next layer: Q(h | v) = sigma(W^T v + c) of each row, as 0/1 samples
    (``mode="sample"``, seeded by (seed, "data", 1000 + layer)) or as probabilities
    (``mode="probs"``; ``v`` may itself be probabilities: a mean-field pass)."""
    p = rbm.hidden_probs(data, probabilities=data.dtype != np.uint8)
    if mode == "probs":
        return p
    if mode != "sample":
        raise ValueError(f"mode must be 'sample' or 'probs', not {mode!r}.")
    rng = np.random.default_rng(seed_sequence(seed, "data", 1000 + int(layer)))
    return (rng.random(p.shape) < p).astype(np.uint8)


LAYER_INPUTS = ("samples", "probs")
#: Trainer settings of the bottom layer alone when its visible units are Gaussian
GAUSSIAN_SETTINGS = ("sigma", "learn_sigma")
#: the kinds of top layer: an RBM, or an SRBM (``Trainer(lateral=True)``)
TOPS = ("rbm", "srbm")
#: Trainer settings of the top layer alone when it is an SRBM
SRBM_SETTINGS = ("reconstruction", "damping", "mean_field_steps")


def train_dbn(data, layers, *, trainers=None, init_transpose=False, seed=0, checkpoint=None,
              resume=False, threads=None, progress=None, layer_input="samples",
              visible="binary", top="rbm", **settings):
    """Train a DBN greedily (SM08 Sec. 4.1) and return it.

    Parameters
    ----------
    data : 0/1 array (N, n_visible), or real rows with ``visible="gaussian"``
    layers : list of int
        Hidden units of each layer, bottom first (e.g. [500, 2000]).
    trainers : list of (Trainer or dict), optional
        Per layer: a Trainer (its n_hidden is replaced by the layer's size, its checkpoint
        by the layer's), or a dict of Trainer settings overriding ``settings``.
    init_transpose : bool
        Start each layer above the first as the transpose of the one below (needs
        ``layers[l + 1]`` equal to the visible size of layer l).
    seed : int
        Seeds every layer's Trainer (unless it has its own) and the samples passed up.
    checkpoint : path, optional
        Checkpoints per layer (:func:`layer_checkpoint`) and a file of the layers done so
        far (:func:`progress_file`); with ``resume`` the run continues from them.
    layer_input : "samples" or "probs"
        What each layer above the first is trained on: 0/1 samples of Q(h_l | h_{l-1})
        (default), or its probabilities (a mean-field up pass; the Trainer's positive
        phase then takes the expectation under them).  Recorded in the DBN's meta.
    visible : "binary" or "gaussian"
        The bottom layer's visible units: "gaussian" trains a GaussianRBM
        (``Trainer(visible="gaussian")``; the settings ``sigma`` and ``learn_sigma`` go
        to it alone) on real data.
    top : "rbm" or "srbm"
        The top layer (of two or more): an RBM, or a semi-restricted Boltzmann machine
        (:class:`cyrbm.models.srbm.SRBM`, MS09 Sec. 5.2's patch DBN) trained by
        ``Trainer(lateral=True)`` on 0/1 samples of Q (the settings ``reconstruction``,
        ``damping`` and ``mean_field_steps`` go to it alone).  Recorded in the DBN's meta;
        resume keeps it.
    **settings
        Trainer settings shared by every layer (method, k, epochs, learning_rate, ...).
    """
    if layer_input not in LAYER_INPUTS:
        raise ModelMismatchError(f"layer_input must be 'samples' or 'probs', not {layer_input!r}.")
    mode = "sample" if layer_input == "samples" else "probs"
    if visible not in ("binary", "gaussian"):
        raise ModelMismatchError(f"visible must be 'binary' or 'gaussian', not {visible!r}.")
    gaussian = model_class(visible).real_valued
    bottom = {k: settings.pop(k) for k in GAUSSIAN_SETTINGS if k in settings}
    if bottom and not gaussian:
        raise ModelMismatchError(f"{', '.join(bottom)} is for Gaussian visible units "
                                 f"(visible='gaussian').")
    if gaussian:
        bottom["visible"] = "gaussian"
        if init_transpose:
            raise ModelMismatchError("init_transpose starts a layer as the transpose of a "
                                     "binary one; a Gaussian bottom layer has no transpose.")
    if top not in TOPS:
        raise ModelMismatchError(f"top must be 'rbm' or 'srbm', not {top!r}.")
    last = trainers[-1] if trainers else None
    if getattr(last, "lateral", False) or (isinstance(last, dict) and last.get("lateral")):
        top = "srbm"                  # the top layer's own Trainer(lateral=True)
    upper = {k: settings.pop(k) for k in SRBM_SETTINGS if k in settings}
    if upper and top != "srbm":
        raise worded(ModelMismatchError(f"{', '.join(upper)} is for an SRBM top layer "
                                        f"(top='srbm')."), parameters=tuple(upper) + ("top",))
    sizes = [int(n) for n in layers]
    if not sizes or any(n < 1 for n in sizes):
        raise ModelMismatchError(f"a DBN needs one or more layers of at least one unit, "
                                 f"not {layers}.")
    if top == "srbm":
        upper["lateral"] = True
        if len(sizes) < 2:
            raise worded(ModelMismatchError("top srbm is the top layer above another, and a "
                                            "DBN of one layer has none; train an SRBM on its "
                                            "own instead."), parameters=("top",))
        if layer_input != "samples":
            raise worded(ModelMismatchError(f"top srbm trains the top layer on 0/1 samples "
                                            f"of Q (an SRBM takes 0/1 rows), so it needs "
                                            f"layer_input samples, not {layer_input}."),
                         parameters=("top", "layer_input"))
    data = (check_real if gaussian else check_binary)(data, name="training data")
    D = data.shape[1]
    full = [D] + sizes
    if init_transpose:
        for l in range(1, len(sizes)):
            if full[l + 1] != full[l - 1]:
                raise ModelMismatchError(
                    f"layer {l} cannot start as the transpose of layer {l - 1}: it has "
                    f"{full[l + 1]} hidden units and layer {l - 1} has {full[l - 1]} visible "
                    f"units (they must be equal).")
    if len(sizes) == 1 and (init_transpose or layer_input != "samples"):
        name = "init_transpose" if init_transpose else "layer_input"
        what = name if init_transpose else f"{name} {layer_input}"
        raise worded(ModelMismatchError(f"{what} sets the layers above the first, and a DBN "
                                        f"of one layer has none."), parameters=(name,))
    if trainers is not None and len(trainers) != len(sizes):
        raise ModelMismatchError(f"{len(trainers)} trainers for {len(sizes)} layers.")
    done = []
    fingerprint = _fingerprint(data)
    if resume:
        done, record = resume_layers(checkpoint, sizes, layer_input=layer_input,
                                     init_transpose=init_transpose)
        pf = progress_file(checkpoint)
        if done and done[0].n_visible != D:
            raise ModelMismatchError(f"the layers done in '{pf}' take {done[0].n_visible} "
                                     f"visible units but the data have {D} columns.")
        if record.get("data_fingerprint", fingerprint) != fingerprint:
            raise ModelMismatchError(f"the layers done in '{pf}' were trained on other "
                                     f"data; resume on the same data.")
        if record.get("visible", "binary") != visible:
            raise ModelMismatchError(f"the layers done in '{pf}' have "
                                     f"{record.get('visible', 'binary')} visible units, not "
                                     f"{visible}; resume with the same units.")
        if record.get("top", "rbm") != top:
            raise worded(ModelMismatchError(f"the layers done in '{pf}' belong to a run with "
                                            f"top {record.get('top', 'rbm')}, not {top}; "
                                            f"resume with the same top."), parameters=("top",))
    # the run's record (``progress`` is the progress bars' setting)
    record = {"data_fingerprint": fingerprint, "layer_input": layer_input,
              "init_transpose": bool(init_transpose), "visible": visible, "top": top}
    x = data
    for l, rbm in enumerate(done):
        x = up_pass(rbm, x, mode=mode, seed=seed, layer=l)
    for l in range(len(done), len(sizes)):
        own = dict(bottom if l == 0 else {}, **(upper if l == len(sizes) - 1 else {}))
        tr = _trainer_for(l, sizes[l], trainers, dict(settings, **own), seed, threads,
                          progress, checkpoint)
        init = done[-1].transposed() if (init_transpose and l > 0) else None
        if top == "srbm" and l == len(sizes) - 1 and not tr.lateral:
            raise ModelMismatchError("top='srbm' trains the top layer with "
                                     "Trainer(lateral=True); the Trainer given for it has "
                                     "lateral=False.")
        if init is not None and tr.lateral:          # an SRBM top: L = 0 to start
            init = SRBM(init.W, init.vbias, init.hbias, dtype=init.dtype)
        ck = tr.checkpoint
        again = bool(resume and ck is not None and os.path.exists(ck))
        rbm = tr.fit(x, model=None if again else init, resume=again,
                     probabilities=(mode == "probs" and l > 0))
        rbm.meta = dict(rbm.meta)
        rbm.meta.setdefault("greedy", {"layer": l, "init_transpose": bool(init_transpose and l > 0),
                                       "data": (f"{layer_input} of Q" if l > 0 else "data")})
        done.append(rbm)
        if checkpoint is not None:
            DBN(done, meta={"progress": record}).save(progress_file(checkpoint))
        if l + 1 < len(sizes):
            x = up_pass(rbm, x, mode=mode, seed=seed, layer=l)
    return DBN(done, meta={"training": {"greedy": True, "layers": sizes,
                                        "init_transpose": bool(init_transpose),
                                        "layer_input": layer_input, "seed": int(seed),
                                        "visible": visible, "top": top}})


def resume_layers(checkpoint, sizes, *, layer_input="samples", init_transpose=False):
    """The finished layers of a DBN run to resume (from :func:`progress_file`) and the
    record of that run, checked against the run asked for: a checkpoint exists, the DBN
    is not finished, the done layers' sizes, layer input and init_transpose are the
    run's, and the first unfinished layer's checkpoint has its size.  A one-sentence
    ModelFileError or ModelMismatchError otherwise."""
    if checkpoint is None:
        raise ModelFileError("resuming a DBN needs its checkpoint path.")
    sizes = [int(n) for n in sizes]
    pf = progress_file(checkpoint)
    done, progress = [], {}
    if os.path.exists(pf):
        dbn = DBN.load(pf)
        progress = dbn.meta.get("progress") or {}
        if not isinstance(progress, dict):
            raise ModelFileError(f"'{pf}' has a 'progress' record that is not a JSON object.")
        have = dbn.sizes[1:]
        if have != sizes[:len(have)]:
            raise ModelMismatchError(
                f"the layers done in '{pf}' have hidden sizes {','.join(map(str, have))}, "
                f"not the start of {','.join(map(str, sizes))}; resume with the same layers.")
        done = list(dbn.layers)
        for l, rbm in enumerate(done[1:], 1):
            was = str(rbm.meta.get("greedy", {}).get("data", f"{layer_input} of Q"))
            if was != f"{layer_input} of Q":
                raise ModelMismatchError(
                    f"layer {l} in '{pf}' was trained on {was}, not on {layer_input} of "
                    f"Q; resume with the same layer input.")
        was = progress.get("layer_input", layer_input)
        if was != layer_input:
            raise ModelMismatchError(
                f"the layers done in '{pf}' belong to a run trained on {was} of Q, not on "
                f"{layer_input}; resume with the same layer input.")
        was = progress.get("init_transpose", bool(init_transpose))
        if "init_transpose" in progress and was != bool(init_transpose):
            raise ModelMismatchError(
                f"the layers done in '{pf}' were trained {'with' if was else 'without'} "
                f"init_transpose; resume {'with' if was else 'without'} it.")
        if len(done) == len(sizes):
            raise worded(ModelMismatchError(
                f"the DBN in '{pf}' is finished: its {len(done)} layers "
                f"({'-'.join(map(str, dbn.sizes))}) are trained, so there is nothing to "
                f"resume; {hint('dbn_finished')}."), hints=("dbn_finished",))
    elif not os.path.exists(layer_checkpoint(checkpoint, 0)):
        raise worded(ModelFileError(f"cannot resume: no checkpoint of this DBN ('{pf}' or "
                                    f"'{layer_checkpoint(checkpoint, 0)}'); "
                                    f"{hint('dbn_no_checkpoint')}."),
                     hints=("dbn_no_checkpoint",))
    ck = layer_checkpoint(checkpoint, len(done))
    if os.path.exists(ck):
        training = (_io.read_meta(ck) or {}).get("training")
        saved = training.get("settings") if isinstance(training, dict) else None
        was = saved.get("n_hidden") if isinstance(saved, dict) else None
        if was is not None and was != sizes[len(done)]:
            raise ModelMismatchError(
                f"the checkpoint '{ck}' of layer {len(done)} has {was} hidden units, not "
                f"{sizes[len(done)]}; resume with the same layers.")
    return done, progress


def _trainer_for(l, n_hidden, trainers, settings, seed, threads, progress, checkpoint):
    spec = None if trainers is None else trainers[l]
    ck = None if checkpoint is None else layer_checkpoint(checkpoint, l)
    if isinstance(spec, Trainer):
        spec.n_hidden = int(n_hidden)
        spec.checkpoint = ck
        return spec
    kw = dict(settings)
    kw.setdefault("seed", seed)
    kw.setdefault("threads", threads)
    kw.setdefault("progress", progress)
    if spec:
        kw.update(spec)
    kw["checkpoint"] = ck
    return Trainer(int(n_hidden), **kw)

