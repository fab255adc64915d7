"""The one table of the unit types: each model class by the name its files and settings
give its visible units ("binary", "gaussian", "lateral"), and reading a model file of
any of them (by the ``visible`` of its meta record)."""
from cyrbm import _io
from cyrbm.errors import ModelMismatchError
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.models.rbm import RBM
from cyrbm.models.srbm import SRBM

__all__ = ["MODEL_CLASSES", "model_class", "read_model", "load_model"]

#: the model class of each kind of visible units
MODEL_CLASSES = {cls.visible: cls for cls in (RBM, GaussianRBM, SRBM)}


def model_class(visible, what="visible"):
    """The model class of the units named ``visible``, or a ModelMismatchError of one
    sentence naming the setting ``what``."""
    cls = MODEL_CLASSES.get(visible) if isinstance(visible, str) else None
    if cls is None:
        names = " or ".join(repr(k) for k in MODEL_CLASSES)
        raise ModelMismatchError(f"{what} must be {names}, not {visible!r}.")
    return cls


def read_model(arrays, path="<arrays>", *, dtype=None):
    """The model in a model file's ``arrays``: the class its meta's ``visible`` names (an
    RBM when it names none); each class refuses a file it cannot read in one sentence."""
    meta = _io.meta_from_array(arrays["meta"], path) if "meta" in arrays else {}
    visible = meta.get("visible", "binary") if isinstance(meta, dict) else "binary"
    return MODEL_CLASSES.get(visible, RBM).from_arrays(arrays, path, dtype=dtype)


def load_model(path, *, dtype=None):
    """Read a model file of any unit type (RBM, GaussianRBM or SRBM)."""
    return read_model(_io.read_npz(path), path, dtype=dtype)
