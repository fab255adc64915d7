"""Grey image patches and their whitening: the data of Murray & Salakhutdinov (2009),
Sec. 5.2 (20 x 20 patches of natural images, "preprocessed and whitened as described in"
Osindero & Hinton 2008, for a Gaussian RBM of 400 visible units).

Patches (:func:`load_patches`)
    Square patches (default 20 x 20) cut at random positions from images that packages
    ship (scikit-learn's sample images ``china.jpg`` and ``flower.jpg``, read with
    Pillow) or from the user's own image files or a folder of them.

    * Grey is the ITU-R 601-2 luminance L = 0.299 R + 0.587 G + 0.114 B (Pillow's "L"
      mode), 8 bits.
    * Pixel scaling: x = (L + u) / 256 with u ~ U[0, 1) drawn from the seed, so each
      pixel lies in [0, 1).  The uniform "dequantization" noise makes the 8-bit values a
      continuous density's data: a density fitted to the raw 256 levels could grow
      without bound on them.  A log density of these x in nats, less 400 ln 256 for 20 x
      20 patches, is the log probability of the 8-bit patch (a lower bound of it in
      expectation over u).
    * Train / test split by held-out image regions: the right-most ``test_fraction``
      (default 1/5) of each image's columns is the test region, the rest the training
      region, and a patch lies wholly inside one of them.  No test pixel is in any
      training patch, so test patches are not overlapping copies of training ones,
      while every image contributes to both sets (holding out whole images would leave
      one training image of scikit-learn's two).  On scikit-learn's images, ZCA-whitened
      on 10,000 training patches, the test patches have a mean variance of 1.10 per
      whitened dimension, fresh training-region patches 1.19 (the diagonal blocks of a
      5 x 5 grid, tried as the held-out region, gave 1.48).
    * Positions are uniform over all the positions of all the images' regions; the
      training patches come from the streams (seed, "data", 2), the test patches from
      (seed, "data", 3), so the test set does not depend on the number of training
      patches.

Whitening (:func:`fit_whitening`, :class:`Whitening`)
    y = A (x - m), fitted on the training patches: ZCA (A = U diag(lambda + eps)^-1/2
    U^T, the symmetric whitening, so whitened patches still look like patches), PCA (A =
    diag(lambda + eps)^-1/2 U^T) or standardisation (A = diag(1 / sd)), with lambda, U the
    eigenvalues and eigenvectors of the training covariance.  The transform is kept with
    a Gaussian RBM's file (:class:`cyrbm.models.gaussian.GaussianRBM`, arrays
    ``whitening_mean`` and ``whitening_matrix``) and applied to test data; a density q
    of whitened vectors is the density ln p(x) = ln q(A (x - m)) + ln|det A| of pixels
    (:attr:`Whitening.log_det`, the Jacobian's log-determinant).
"""
import importlib.util
import math
import os

import numpy as np

from cyrbm._validation import check_real, data_generator
from cyrbm.errors import DataError

__all__ = ["load_patches", "sample_image_files", "fit_whitening", "Whitening",
           "WHITENINGS", "IMAGE_EXTENSIONS"]

#: the kinds of whitening :func:`fit_whitening` fits
WHITENINGS = ("zca", "pca", "standardize")
#: file names a folder of images is searched for (case ignored)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".ppm",
                    ".pgm", ".webp")
_SAMPLE_IMAGES = ("china.jpg", "flower.jpg")


# ------------------------------------------------------------------------ images
def sample_image_files():
    """The paths of scikit-learn's sample images (china.jpg, flower.jpg), found without
    importing scikit-learn; a DataError of one sentence when it is not installed."""
    spec = importlib.util.find_spec("sklearn")
    where = (None if spec is None or not spec.submodule_search_locations
             else os.path.join(list(spec.submodule_search_locations)[0], "datasets", "images"))
    paths = [os.path.join(where, name) for name in _SAMPLE_IMAGES] if where else []
    if not paths or not all(os.path.isfile(p) for p in paths):
        raise DataError("the patches of scikit-learn's sample images need scikit-learn "
                        "(pip install scikit-learn); or give image files of your own.")
    return paths


def _image_files(images):
    """The image files of ``images``: None (scikit-learn's samples), a file, a folder
    (its files with an image extension, sorted) or a list of files."""
    if images is None:
        return sample_image_files()
    if isinstance(images, (str, os.PathLike)):
        path = os.fspath(images)
        if os.path.isdir(path):
            found = sorted(os.path.join(path, f) for f in os.listdir(path)
                           if f.lower().endswith(IMAGE_EXTENSIONS)
                           and os.path.isfile(os.path.join(path, f)))
            if not found:
                raise DataError(f"no images found in the folder '{path}' (looked for "
                                f"{', '.join(IMAGE_EXTENSIONS)} files).")
            return found
        images = [path]
    paths = [os.fspath(p) for p in images]
    if not paths:
        raise DataError("no images given to cut patches from.")
    for p in paths:
        if not os.path.isfile(p):
            raise DataError(f"no such image file '{p}'.")
    return paths


def _read_grey(path):
    """The image at ``path`` as 8-bit luminance (uint8, height x width)."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DataError("reading images needs Pillow (pip install pillow).") from None
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("L"), dtype=np.uint8)
    except UnidentifiedImageError:
        raise DataError(f"'{path}' is not an image file Pillow can read.") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise DataError(f"the image file '{path}' cannot be read "
                        f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}).") from None


def _regions(shape, size, test_fraction, path):
    """(training columns, test columns) of an image: the test region is the right-most
    ceil(test_fraction * width) columns."""
    height, width = shape
    if size > height or size > width:
        raise DataError(f"a patch of {size} x {size} pixels is bigger than the image "
                        f"'{path}' ({width} x {height}).")
    n_test = int(math.ceil(test_fraction * width))
    if n_test < size or width - n_test < size:
        raise DataError(f"the image '{path}' ({width} x {height}) is too narrow for "
                        f"{size} x {size} patches in both its training region and its "
                        f"held-out test region (the right-most {n_test} columns).")
    return (0, width - n_test), (width - n_test, width)


def load_patches(images=None, *, size=20, n=10000, split="train", seed=0,
                 test_fraction=0.2):
    """Random square grey patches of images, as rows in [0, 1) (see the module's notes:
    luminance, dequantization, the split by held-out image regions).

    Parameters
    ----------
    images : None, path or list of paths
        None: scikit-learn's sample images (china.jpg, flower.jpg); a file, a folder (its
        image files) or a list of files, read with Pillow.
    size : int
        Patch side in pixels (default 20, as MS09); rows have size^2 columns.
    n : int
        Number of patches.
    split : {"train", "test"}
        Patches from the images' training or held-out test regions.
    seed : int
        Positions and dequantization noise from (seed, "data", 2) (train) or 3 (test).
    test_fraction : float
        The share of each image's columns held out for test patches, in (0, 1).

    Returns
    -------
    numpy.ndarray, float64, shape (n, size * size)
        Patches row-major, C-contiguous.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise DataError(f"the patch size must be a whole number of at least 1, not {size!r}.")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DataError(f"the number of patches must be a whole number of at least 1, "
                        f"not {n!r}.")
    if split not in ("train", "test"):
        raise DataError(f"split must be 'train' or 'test', not {split!r}.")
    if isinstance(test_fraction, bool) or not (isinstance(test_fraction, (int, float))
                                               and 0 < test_fraction < 1):
        raise DataError(f"test_fraction must be a number between 0 and 1 (exclusive), "
                        f"not {test_fraction!r}.")
    size, n = int(size), int(n)
    grey, spans = [], []
    for path in _image_files(images):
        image = _read_grey(path)
        train, test = _regions(image.shape, size, test_fraction, path)
        grey.append(image)
        spans.append(train if split == "train" else test)
    rows = np.array([g.shape[0] - size + 1 for g in grey])
    cols = np.array([hi - lo - size + 1 for lo, hi in spans])
    counts = rows * cols                                   # positions per image
    rng = data_generator(seed, 2 if split == "train" else 3)
    pick = rng.integers(0, int(counts.sum()), n)           # uniform over every position
    which = np.searchsorted(np.cumsum(counts), pick, side="right")
    offset = pick - (np.cumsum(counts) - counts)[which]
    top, left = offset // cols[which], offset % cols[which]
    out = np.empty((n, size * size))
    for i, g in enumerate(grey):
        mine = np.flatnonzero(which == i)
        if mine.size == 0:
            continue
        windows = np.lib.stride_tricks.sliding_window_view(g, (size, size))
        cut = windows[top[mine], left[mine] + spans[i][0]]
        out[mine] = cut.reshape(mine.size, size * size)
    out += rng.random(out.shape)                           # dequantization: L + u
    out /= 256.0
    return out


# --------------------------------------------------------------------- whitening
class Whitening:
    """The affine map y = A (x - m) of whitened data, with ln|det A|.

    Parameters
    ----------
    mean : array, shape (D,)
        m.
    matrix : array, shape (D, D)
        A, invertible.
    kind : str
        How it was fitted ("zca", "pca", "standardize", or another word for a given A).
    """

    def __init__(self, mean, matrix, kind="given"):
        mean = np.asarray(mean, dtype=np.float64)
        matrix = np.asarray(matrix, dtype=np.float64)
        D = mean.shape[0] if mean.ndim == 1 else -1
        if mean.ndim != 1 or matrix.shape != (D, D) or D < 1:
            raise DataError("a whitening needs a mean of D entries and a D x D matrix.")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(matrix))):
            raise DataError("a whitening's mean and matrix must be finite.")
        sign, log_det = np.linalg.slogdet(matrix)
        if sign == 0 or not np.isfinite(log_det):
            raise DataError("a whitening's matrix must be invertible.")
        self.mean = np.ascontiguousarray(mean)
        self.matrix = np.ascontiguousarray(matrix)
        self.kind = str(kind)
        #: ln|det A|: ln p(x) = ln q(A (x - m)) + log_det for a density q of whitened rows
        self.log_det = float(log_det)

    @property
    def n_features(self):
        return self.mean.shape[0]

    def __repr__(self):
        return f"Whitening(kind={self.kind!r}, n_features={self.n_features})"

    def transform(self, X, name="data"):
        """A (x - m) of each row of ``X`` (checked: finite reals of D columns), float64."""
        X = check_real(X, name=name, allow_1d=True)
        if X.shape[1] != self.n_features:
            raise DataError(f"{name} has {X.shape[1]} columns but the whitening was fitted "
                            f"to {self.n_features}.")
        return np.ascontiguousarray((X - self.mean) @ self.matrix.T)

    def inverse(self, Y):
        """x = A^-1 y + m of each row of ``Y``: whitened rows (model samples) as pixels."""
        Y = check_real(Y, name="whitened rows", allow_1d=True)
        return np.linalg.solve(self.matrix, Y.T).T + self.mean

    def to_arrays(self):
        """The arrays of a model file (``whitening_mean``, ``whitening_matrix``) and the
        meta record {"kind", "log_det"}."""
        return ({"whitening_mean": self.mean, "whitening_matrix": self.matrix},
                {"kind": self.kind, "log_det": self.log_det})

    @classmethod
    def from_arrays(cls, arrays, record=None):
        """The whitening of a model file's arrays, or None when it has none."""
        if "whitening_matrix" not in arrays and "whitening_mean" not in arrays:
            return None
        if "whitening_matrix" not in arrays or "whitening_mean" not in arrays:
            raise DataError("a whitening needs both arrays whitening_mean and "
                            "whitening_matrix.")
        kind = (record or {}).get("kind", "given") if isinstance(record, dict) else "given"
        return cls(arrays["whitening_mean"], arrays["whitening_matrix"], kind)


def fit_whitening(X, kind="zca", *, eps=0.0):
    """Fit a :class:`Whitening` to the rows of ``X`` (the training patches).

    ``kind``: "zca" (A = U diag(lambda + eps)^-1/2 U^T), "pca" (A = diag(lambda +
    eps)^-1/2 U^T, components by decreasing variance) or "standardize" (A = diag(1 /
    sqrt(var + eps))), with lambda, U the eigenvalues and eigenvectors of the covariance
    of ``X`` (maximum likelihood, divided by n).  ``eps`` >= 0 regularises small
    eigenvalues; a covariance whose smallest eigenvalue is below 1e-12 of its largest
    (and eps 0) is refused, as it has no whitening.
    """
    if kind not in WHITENINGS:
        raise DataError(f"the whitening must be one of {', '.join(WHITENINGS)}, not {kind!r}.")
    if isinstance(eps, bool) or not (isinstance(eps, (int, float)) and eps >= 0
                                     and math.isfinite(eps)):
        raise DataError(f"eps must be a non-negative number, not {eps!r}.")
    X = check_real(X, name="the data to whiten")
    if X.shape[0] < 2:
        raise DataError("a whitening needs at least two rows to fit.")
    mean = X.mean(axis=0)
    Xc = X - mean
    if kind == "standardize":
        var = np.mean(Xc * Xc, axis=0) + eps
        if np.any(var <= 0):
            raise DataError(f"column {int(np.argmin(var)) + 1} of the data is constant, so "
                            f"it cannot be standardized (give eps > 0).")
        return Whitening(mean, np.diag(1.0 / np.sqrt(var)), kind)
    lam, U = np.linalg.eigh(Xc.T @ Xc / X.shape[0])
    lam, U = lam[::-1], U[:, ::-1]                       # by decreasing variance
    lam = lam + eps
    if lam[-1] <= 1e-12 * lam[0]:
        raise DataError("the data's covariance is singular (some combination of the "
                        "columns is constant), so it has no whitening; give eps > 0.")
    scale = 1.0 / np.sqrt(lam)
    A = scale[:, None] * U.T
    return Whitening(mean, U @ A if kind == "zca" else A, kind)
