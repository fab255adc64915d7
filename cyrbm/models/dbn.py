"""The Deep Belief Network: a stack of the model classes, bottom first (SM08 Sec. 4), and
its file format.

A DBN's bottom layer may be a :class:`cyrbm.GaussianRBM` (Gaussian visible units, MS09
Sec. 5.2) and its top layer a :class:`cyrbm.SRBM` (lateral weights); the layers in
between are binary :class:`cyrbm.RBM` objects.  This module imports the three classes
it holds, so reading a DBN file needs no registry.

File format (``.npz``): each layer's arrays with a prefix ``layer{l}_`` (``layer0_W``,
``layer0_vbias``, ...; ``layer0_sigma`` for a Gaussian bottom, ``layer{L-1}_L`` for a
top with lateral weights) and a JSON ``meta`` (format "cyrbm.dbn", its version, the
sizes, the kinds of the bottom and top layers, each layer's own record).
"""
import numpy as np

from cyrbm import _io
from cyrbm.errors import ModelFileError, ModelMismatchError, ModelTypeError
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.models.kinds import MODEL_CLASSES
from cyrbm.models.rbm import RBM, Layers, _check_version, _float_dtype, _version

__all__ = ["DBN", "as_dbn"]

DBN_FORMAT = "cyrbm.dbn"
#: 2: a bottom layer of Gaussian visible units (meta "visible": "gaussian", array
#: layer0_sigma); 3: a top layer with lateral weights, an SRBM (meta "top": "lateral",
#: array layer{L-1}_L).  A file is written with the lowest version that holds it:
#: binary DBNs as version 1, a Gaussian bottom under an RBM top as version 2
DBN_FORMAT_VERSION = 3
_LAYER_ARRAYS = ("W", "vbias", "hbias")


class DBN:
    """A Deep Belief Network: a stack of RBMs, bottom first (SM08 Sec. 4).

    With layers 0 .. L-1 and h_0 = v, the generative model is directed below the top::

        p(h_l | h_{l+1}) = sigma(W_l h_{l+1} + b_l)          for l < L-1,

    and the top two layers (h_{L-1}, h_L) form the undirected RBM ``layers[-1]``, so::

        p(v, h_1, .., h_L) = p(v | h_1) ... p(h_{L-2} | h_{L-1}) p(h_{L-1}, h_L).

    The factorial recognition model that greedy training leaves (SM08 Eq. 19, Sec. 4.2) is::

        Q(h_{l+1} | h_l) = sigma(W_l^T h_l + c_l),

    with W_l, b_l (vbias), c_l (hbias) the parameters of ``layers[l]``.  One layer is an
    RBM.

    Parameters
    ----------
    layers : list of RBM
        Bottom first; ``layers[l].n_hidden == layers[l + 1].n_visible``.  Stored in one
        dtype: float64 if any layer is float64, else float32 (or ``dtype``).  The bottom
        layer may be a :class:`cyrbm.models.gaussian.GaussianRBM` (Gaussian visible units, MS09
        Sec. 5.2; see :mod:`cyrbm.estimators.gaussian_dbn`): then p(v | h_1) is its Gaussian.
        The top layer of two or more may be a :class:`cyrbm.models.srbm.SRBM` (lateral weights
        among h_{L-1}, MS09 Sec. 5.2's patch DBN).
    dtype : float32 or float64, optional
    meta : dict, optional
        Free-form record (how the stack was trained), saved with it.
    """

    def __init__(self, layers, *, dtype=None, meta=None):
        layers = dbn_layer_list(layers, "a DBN")
        if not layers:
            raise ModelMismatchError("a DBN needs at least one layer (an RBM).")
        for l in range(len(layers) - 1):
            if layers[l].n_hidden != layers[l + 1].n_visible:
                raise ModelMismatchError(
                    f"layer {l} has {layers[l].n_hidden} hidden units but layer {l + 1} has "
                    f"{layers[l + 1].n_visible} visible units: the layers of a DBN must chain.")
        if dtype is None:
            dtype = (np.float64 if any(r.dtype == np.float64 for r in layers) else np.float32)
        dtype = _float_dtype(dtype)
        self.layers = [r if r.dtype == dtype else r.astype(dtype) for r in layers]
        self.meta = dict(meta or {})

    @property
    def n_layers(self):
        return len(self.layers)

    @property
    def top(self):
        """The undirected top RBM, ``layers[-1]``."""
        return self.layers[-1]

    @property
    def sizes(self):
        """[n_visible, n_h1, ..., n_hL]."""
        return [self.layers[0].n_visible] + [r.n_hidden for r in self.layers]

    @property
    def n_visible(self):
        return self.layers[0].n_visible

    @property
    def visible(self):
        """The kind of the visible units: "binary", or the bottom layer's ("gaussian")."""
        return getattr(self.layers[0], "visible", "binary")

    @property
    def real_valued(self):
        """Whether the visible units take real values (a Gaussian bottom layer)."""
        return self.layers[0].real_valued

    @property
    def top_kind(self):
        """The kind of the top layer: "rbm", or "lateral" for an SRBM (lateral weights
        among its visible units, MS09 Sec. 5.2)."""
        top = self.layers[-1]
        return "lateral" if self.n_layers > 1 and getattr(top, "visible", None) == "lateral" \
            else "rbm"

    @property
    def dtype(self):
        return self.layers[0].dtype

    def astype(self, dtype):
        return DBN([r.astype(dtype) for r in self.layers], dtype=dtype, meta=dict(self.meta))

    def __repr__(self):
        return f"DBN(sizes={'-'.join(str(s) for s in self.sizes)}, dtype={self.dtype.name})"

    def recognition_probs(self, v, layer=None):
        """Mean-field pass of the recognition model: Q(h_1 = 1 | v), then
        Q(h_{l+1} = 1 | q_l) with the probabilities of the layer below as input, up to
        h_``layer`` (default: the top, h_L).  One row per v."""
        x = self.layers[0]._visible_data(v, "v")
        layer = self.n_layers if layer is None else int(layer)
        if not 1 <= layer <= self.n_layers:
            raise ValueError(f"layer must be between 1 and {self.n_layers}, not {layer}.")
        for l, r in enumerate(self.layers[:layer]):
            x = r.hidden_probs(x) if l == 0 else r.hidden_probs(x, probabilities=True)
        return x

    # ---------------------------------------------------------------- files
    def to_arrays(self):
        """The arrays of the .npz layout: layer{l}_W, layer{l}_vbias, layer{l}_hbias and
        meta (format "cyrbm.dbn", sizes, each layer's own record under "layers")."""
        out = {}
        records = [dict(r.meta) for r in self.layers]
        top = self.top_kind
        for l, r in enumerate(self.layers):
            plain = isinstance(r, RBM) and getattr(r, "lateral", None) is None
            own = ((l == 0 and self.visible != "binary")
                   or (l == self.n_layers - 1 and top != "rbm"))
            if not (plain or own):
                raise ModelMismatchError(f"layer {l} ({type(r).__name__}, lateral "
                                         f"connections) is not one a DBN file of this "
                                         f"version can hold.")
            out[f"layer{l}_W"] = r.W
            out[f"layer{l}_vbias"] = r.vbias
            out[f"layer{l}_hbias"] = r.hbias
            if own:          # every array of the layer's own model file, its record
                arrays = r.to_arrays()
                out.update({f"layer{l}_{k}": a for k, a in arrays.items() if k != "meta"})
                records[l] = _io.meta_from_array(arrays["meta"], "<model>")
        version = 3 if top != "rbm" else 1 if self.visible == "binary" else 2
        meta = {
            "format": DBN_FORMAT,
            "format_version": version,
            **({} if self.visible == "binary" else {"visible": self.visible}),
            **({} if top == "rbm" else {"top": top}),
            "dtype": self.dtype.name,
            "n_layers": self.n_layers,
            "sizes": [int(s) for s in self.sizes],
            "cyrbm_version": _version(),
            "layers": records,
        }
        meta.update({k: v for k, v in self.meta.items() if k not in meta})
        out["meta"] = _io.meta_to_array(meta)
        return out

    def save(self, path):
        """Write the DBN to ``path`` (.npz) atomically."""
        _io.atomic_savez(path, self.to_arrays())

    @classmethod
    def load(cls, path, *, dtype=None):
        """Read a DBN file (or a plain RBM model file, as a DBN of one layer)."""
        return cls.from_arrays(_io.read_npz(path), path, dtype=dtype)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>", *, dtype=None):
        what = "DBN file"
        if "layer0_W" not in arrays and "W" in arrays:      # an RBM file: one layer
            return cls([RBM.from_arrays(arrays, path, dtype=dtype)], dtype=dtype)
        meta = {}
        if "meta" in arrays:
            meta = _io.meta_from_array(arrays["meta"], path, what)
            fmt = meta.get("format", DBN_FORMAT)
            if fmt != DBN_FORMAT:
                raise ModelFileError(f"{what} '{path}' holds a '{fmt}', not a DBN ('{DBN_FORMAT}').")
            _check_version(meta, path, what, DBN_FORMAT_VERSION)
        found = sorted({int(k[5:].split("_", 1)[0]) for k in arrays
                        if k.startswith("layer") and "_" in k and k[5:].split("_", 1)[0].isdigit()})
        n_layers = meta.get("n_layers", (found[-1] + 1) if found else 0)
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
            if not found:
                raise ModelFileError(f"{what} '{path}' has no layers (no array 'layer0_W'; it "
                                     f"has {', '.join(sorted(arrays)) or 'none'}).")
            raise ModelFileError(f"{what} '{path}' has an invalid layer count {n_layers!r}.")
        extra = [l for l in found if l >= n_layers]
        if extra:
            raise ModelFileError(f"{what} '{path}' says it has {n_layers} layers but holds "
                                 f"arrays of layer {extra[0]}.")
        layer_meta = meta.get("layers", [{}] * n_layers)
        if not isinstance(layer_meta, list) or len(layer_meta) != n_layers:
            layer_meta = [{}] * n_layers
        layers = []
        for l in range(n_layers):
            names = [f"layer{l}_{a}" for a in _LAYER_ARRAYS]
            missing = [n for n in names if n not in arrays]
            if missing:
                raise ModelFileError(
                    f"{what} '{path}' lacks layer {l} of {n_layers} (no array"
                    f"{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}).")
            if l == 0 and (meta.get("visible", "binary") != "binary" or "layer0_sigma" in arrays):
                layers.append(_own_layer(arrays, path, 0, meta.get("visible", "gaussian"),
                                         layer_meta[0], dtype, what))
                continue
            if l == n_layers - 1 and (meta.get("top", "rbm") != "rbm" or f"layer{l}_L" in arrays):
                if l == 0:
                    raise ModelFileError(f"{what} '{path}' has one layer with lateral "
                                         f"weights; a DBN's top layer above another may "
                                         f"have them (an SRBM file holds one alone).")
                layers.append(_own_layer(arrays, path, l, meta.get("top", "lateral"),
                                         layer_meta[l], dtype, what))
                continue
            sub = {a: arrays[n] for a, n in zip(_LAYER_ARRAYS, names)}
            rbm = RBM.from_arrays(sub, path, dtype=dtype, what=f"{what} (layer {l})")
            if isinstance(layer_meta[l], dict):
                rbm.meta = dict(layer_meta[l])
            layers.append(rbm)
        for l in range(n_layers - 1):
            if layers[l].n_hidden != layers[l + 1].n_visible:
                raise ModelFileError(
                    f"{what} '{path}': layer {l} has {layers[l].n_hidden} hidden units but "
                    f"layer {l + 1} has {layers[l + 1].n_visible} visible units.")
        sizes = [layers[0].n_visible] + [r.n_hidden for r in layers]
        if "sizes" in meta and meta["sizes"] != sizes:
            raise ModelFileError(f"{what} '{path}' is corrupt: its meta says sizes "
                                 f"{meta['sizes']!r} but its arrays have {sizes}.")
        keep = {k: v for k, v in meta.items()
                if k not in ("format", "format_version", "dtype", "n_layers", "sizes",
                             "cyrbm_version", "layers", "visible", "top")}
        return cls(layers, dtype=dtype, meta=keep)


def _own_layer(arrays, path, l, kind, record, dtype, what):
    """Layer ``l`` of a DBN file stored as its own model file's arrays (a bottom layer
    of Gaussian visible units, a top layer with lateral weights): the arrays
    layer{l}_* and the layer's record, read by the model class of ``kind``
    (:data:`_LAYER_CLASSES`: "gaussian", "lateral")."""
    cls = _LAYER_CLASSES.get(kind) if isinstance(kind, str) else None
    where = "bottom" if l == 0 else "top"
    if cls is None:
        raise ModelFileError(f"{what} '{path}' has a {where} layer of kind {kind!r}, which "
                             f"this cyrbm cannot read.")
    prefix = f"layer{l}_"
    sub = {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}
    if isinstance(record, dict):
        sub["meta"] = _io.meta_to_array(record)
    return cls.from_arrays(sub, path, dtype=dtype, what=f"{what} (layer {l})")


#: the model class of each kind of layer a DBN file stores by its own arrays
_LAYER_CLASSES = {k: cls for k, cls in MODEL_CLASSES.items() if cls is not RBM}


def dbn_layer_list(dbn, what):
    """The layers of ``dbn`` (a DBN, a list of layers bottom first, or one layer) as a
    list, each of a kind a DBN holds: binary RBMs, the bottom one may be a GaussianRBM and
    the top of two or more any model on binary units (an SRBM: lateral weights); else a
    ModelTypeError of one sentence naming ``what`` needs them."""
    layers = getattr(dbn, "layers", dbn)
    if isinstance(layers, Layers):
        layers = [layers]
    try:
        layers = list(layers)
    except TypeError:
        raise ModelTypeError(f"{what} is made from a list of RBMs, bottom first, not "
                             f"{type(dbn).__name__}.") from None
    for l, layer in enumerate(layers):
        if not (isinstance(layer, RBM) or l == 0 and isinstance(layer, GaussianRBM)
                or 0 < l == len(layers) - 1 and isinstance(layer, Layers)
                and not layer.real_valued):
            raise ModelTypeError(f"layer {l} of {what} must be a cyrbm.RBM"
                                 f"{' or GaussianRBM' if l == 0 else ' or SRBM (the top)'}, "
                                 f"not {type(layer).__name__}.")
    return layers


def as_dbn(model, name="model"):
    """``model`` as a DBN: a DBN itself, or a model of one layer (an RBM, GaussianRBM
    or SRBM) as a DBN of that layer; else a ModelTypeError naming ``name``."""
    if isinstance(model, Layers):
        return DBN([model])
    if not isinstance(model, DBN):
        raise ModelTypeError(f"{name} must be a cyrbm.DBN or one of its layers (an RBM, "
                             f"GaussianRBM or SRBM), not {type(model).__name__}.")
    return model
