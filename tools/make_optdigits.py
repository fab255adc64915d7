"""Build ``cyrbm/data/optdigits.npz``, the bundled binarized 8x8 digits.

Usage::

    python tools/make_optdigits.py PATH/TO/digits.csv.gz [OUTPUT.npz]

The input is scikit-learn's bundled copy of the UCI "Optical Recognition of
Handwritten Digits" test set (``sklearn/datasets/data/digits.csv.gz``): 1797
rows of 64 pixel intensities (0..16) followed by the class label (0..9).

Each pixel is binarized as ``intensity >= 8`` (Cho, Raiko & Ilin 2010 round
intensities below 8 to 0 and the others to 1).  The output file holds

``images``
    uint8, shape (1797, 8): the binary pixels packed with ``np.packbits``
    along axis 1 (big bit order, row-major 8x8 pixels).
``n_features``
    the number of pixels per image, 64 (needed to unpack).
``labels``
    uint8, shape (1797,): the digit classes, in the original row order.

The output is written with ``np.savez_compressed``.  Only the Python standard
library and NumPy are needed; scikit-learn itself is not imported.
"""

import gzip
import hashlib
import os
import sys

import numpy as np

THRESHOLD = 8
N_PIXELS = 64
N_ROWS = 1797
DEFAULT_OUTPUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, "cyrbm", "data", "optdigits.npz"
)


def read_digits_csv(path):
    """Return (intensities uint8 (n, 64), labels uint8 (n,)) from the csv.gz file."""
    with gzip.open(path, "rt", encoding="ascii") as handle:
        table = np.loadtxt(handle, delimiter=",", dtype=np.int64, ndmin=2)
    if table.shape != (N_ROWS, N_PIXELS + 1):
        raise SystemExit(f"expected {N_ROWS} rows of {N_PIXELS + 1} columns, got {table.shape}")
    pixels, labels = table[:, :N_PIXELS], table[:, N_PIXELS]
    if pixels.min() < 0 or pixels.max() > 16:
        raise SystemExit("pixel intensities outside 0..16")
    if labels.min() < 0 or labels.max() > 9:
        raise SystemExit("labels outside 0..9")
    return pixels.astype(np.uint8), labels.astype(np.uint8)


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: python tools/make_optdigits.py DIGITS_CSV_GZ [OUTPUT_NPZ]", file=sys.stderr)
        return 2
    source = argv[1]
    output = os.path.normpath(argv[2] if len(argv) == 3 else DEFAULT_OUTPUT)

    pixels, labels = read_digits_csv(source)
    binary = (pixels >= THRESHOLD).astype(np.uint8)
    packed = np.packbits(binary, axis=1)
    assert packed.shape == (N_ROWS, N_PIXELS // 8)
    assert np.array_equal(np.unpackbits(packed, axis=1, count=N_PIXELS), binary)

    np.savez_compressed(
        output,
        images=packed,
        n_features=np.array(N_PIXELS, dtype=np.int64),
        labels=labels,
    )
    with open(source, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    print(f"read {source} (sha256 {digest})")
    print(f"wrote {output}: {binary.shape[0]} images x {binary.shape[1]} pixels, "
          f"density {binary.mean():.4f}, {os.path.getsize(output)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
