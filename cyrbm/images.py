"""Pictures of a model: a grid of its samples, and its hidden units' weights as images.

Each visible vector is one image of ``shape`` (height, width) pixels, row-major as the
data were flattened.  Samples are drawn as grey levels 0 (black) .. 1 (white); filters
(column j of W, the weights into hidden unit j) are scaled by their own largest absolute
weight, so mid-grey is 0, white positive and black negative, as in Hinton's figures.

PNG files are written by Pillow (the optional extra ``images``:
``pip install "cyrbm[images]"``), atomically like model files.
"""
import math
import re

import numpy as np

from cyrbm import _io
from cyrbm.errors import CyrbmError, ModelMismatchError

#: Each tile is enlarged (nearest neighbour) until its longer side has at least this
#: many pixels, so 8 x 8 digits are visible on a screen.
MIN_TILE_PIXELS = 28


def image_shape(n_visible, shape=None):
    """(height, width) of one image of ``n_visible`` pixels.

    ``shape`` is ``"HxW"`` or a pair; without it the image is square, which needs
    ``n_visible`` to be a perfect square.
    """
    n_visible = int(n_visible)
    if shape is None:
        side = math.isqrt(n_visible)
        if side * side != n_visible:
            raise ModelMismatchError(
                f"the model's {n_visible} visible units are not a square image; give its "
                f"shape as HxW (--shape).")
        return side, side
    if isinstance(shape, str):
        match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", shape)
        if match is None:
            raise ValueError(f"the shape must be written HxW (for example 28x28), not {shape!r}.")
        shape = (int(match.group(1)), int(match.group(2)))
    height, width = (int(s) for s in shape)
    if height < 1 or width < 1 or height * width != n_visible:
        raise ModelMismatchError(
            f"the shape {height}x{width} has {height * width} pixels but the model has "
            f"{n_visible} visible units.")
    return height, width


def tile(images, shape, *, columns=None, pad=1, background=0.5):
    """Arrange rows of ``images`` (values in [0, 1]) in a grid; returns uint8 grey levels.

    Parameters
    ----------
    images : array, shape (n, height * width)
    shape : (height, width) of one image
    columns : tiles per row of the grid (default: about square)
    pad : pixels between tiles, before enlargement
    background : grey level of the padding
    """
    images = np.asarray(images, dtype=np.float64)
    n = images.shape[0]
    if n == 0:
        raise ValueError("there are no images to draw.")
    height, width = shape
    columns = int(columns or math.ceil(math.sqrt(n)))
    rows = math.ceil(n / columns)
    zoom = max(1, math.ceil(MIN_TILE_PIXELS / max(height, width)))
    grid = np.full((rows * (height + pad) + pad, columns * (width + pad) + pad), background)
    for k in range(n):
        r, c = divmod(k, columns)
        top, left = pad + r * (height + pad), pad + c * (width + pad)
        grid[top:top + height, left:left + width] = images[k].reshape(height, width)
    grid = np.kron(grid, np.ones((zoom, zoom)))
    return np.round(np.clip(grid, 0.0, 1.0) * 255).astype(np.uint8)


def filter_images(W):
    """Column j of ``W`` as grey levels: 0.5 + 0.5 W_ij / max_i |W_ij|, one row per unit."""
    W = np.asarray(W, dtype=np.float64)
    scale = np.abs(W).max(axis=0)
    scale[scale == 0] = 1.0
    return (0.5 + 0.5 * W / scale).T


def save_png(path, grid):
    """Write the uint8 grey-level array ``grid`` to ``path`` as a PNG, atomically."""
    try:
        from PIL import Image
    except ImportError:
        raise CyrbmError("writing images needs Pillow: pip install \"cyrbm[images]\" "
                         "(or pip install pillow).") from None
    picture = Image.fromarray(np.ascontiguousarray(grid, dtype=np.uint8))   # 2-D uint8: "L"
    _io.atomic_write(path, lambda f: picture.save(f, format="PNG"), ".png.tmp")
    return picture.size


def save_samples(path, samples, shape, *, columns=None):
    """A grid of visible vectors (0/1 or probabilities) as a PNG; returns (width, height)."""
    return save_png(path, tile(samples, shape, columns=columns))


def save_filters(path, W, shape, *, columns=None):
    """The weights into each hidden unit (columns of ``W``) as a grid of images."""
    return save_png(path, tile(filter_images(W), shape, columns=columns))
