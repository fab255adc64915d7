"""MNIST-like 28x28 binary digits made from cyrbm's bundled 8x8 digits (no download).

MNIST itself is not available offline, so benchmarks and the slow accuracy tests use
images built like this, one per (source digit, copy) pair:

1. take a bundled binary 8x8 digit (UCI optical digits, ``cyrbm.data.datasets.load_digits``)
   and smooth it with a Gaussian (sigma 0.5 pixel) so strokes get soft edges;
2. resample it to a 20x20 box by cubic interpolation through a random affine map:
   rotation within +-12 degrees, scale 0.9-1.1, shear within +-0.15 (MNIST's digits
   also sit in a 20x20 box);
3. place the box in a 28x28 frame with its centre shifted by up to +-2 pixels;
4. thicken or thin the strokes: intensity = sigmoid((x - t) / 0.06) with a threshold
   t drawn per image from [0.35, 0.60] (low t = thick strokes);
5. binarize stochastically, each pixel on with probability equal to its intensity, as
   Salakhutdinov & Murray (2008, Sec. 5) binarized MNIST.

The result has about 15% of its pixels on (MNIST: 13%), digit-shaped strokes of
varying thickness and slant, noisy edges, and empty borders: the structure that makes
trained RBM weights and AIS behave as they do on MNIST.  Everything is seeded.
"""
import numpy as np
from scipy import ndimage

from cyrbm.data.datasets import load_digits


def mnistlike(n=5000, *, seed=0, return_labels=False):
    """``n`` binary 28x28 digit images, flattened to uint8 rows of 784 pixels.

    Parameters
    ----------
    n : int
        Number of images; the 1797 source digits are cycled.
    seed : int
        Seeds every random choice (source order, affine maps, thickness, binarization).
    return_labels : bool
        Also return the digit classes.
    """
    src, labels = load_digits(return_labels=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(src))
    out = np.empty((n, 28, 28), dtype=np.float64)
    lab = np.empty(n, dtype=np.uint8)
    for k in range(n):
        s = order[k % len(src)]
        img = ndimage.gaussian_filter(src[s].reshape(8, 8).astype(np.float64), 0.5)
        angle = np.deg2rad(rng.uniform(-12, 12))
        scale = rng.uniform(0.9, 1.1)
        shear = rng.uniform(-0.15, 0.15)
        c, si = np.cos(angle), np.sin(angle)
        # output (28x28) coordinates -> input (8x8) coordinates
        A = np.array([[c, -si], [si, c]]) @ np.array([[1.0, shear], [0.0, 1.0]])
        A = A * (8.0 / 20.0) / scale
        centre_out = np.array([13.5, 13.5]) + rng.uniform(-2, 2, size=2)
        centre_in = np.array([3.5, 3.5])
        offset = centre_in - A @ centre_out
        big = ndimage.affine_transform(img, A, offset=offset, output_shape=(28, 28),
                                       order=3, mode="constant", cval=0.0)
        big = np.clip(big / max(img.max(), 1e-9), 0.0, 1.0)
        t = rng.uniform(0.35, 0.60)
        out[k] = 1.0 / (1.0 + np.exp(-(big - t) / 0.06))
        lab[k] = labels[s]
    out[out < 1e-3] = 0.0
    v = (rng.random(out.shape) < out).astype(np.uint8).reshape(n, 784)
    return (v, lab) if return_labels else v


def ascii_art(row):
    """A 28x28 image as 28 lines of text (for a quick look)."""
    img = np.asarray(row).reshape(28, 28)
    return "\n".join("".join("#" if p else "." for p in line) for line in img)


if __name__ == "__main__":
    v = mnistlike(10, seed=1)
    for r in v[:3]:
        print(ascii_art(r), "\n")
    print("density", mnistlike(2000).mean())
