"""Data: the loaders (.npy, .npz, .csv, IDX, the bundled sets), binarization,
image patches and their whitening; the bundled files beside them."""
