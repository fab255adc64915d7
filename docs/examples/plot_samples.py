"""
Samples and filters of a digits RBM
===================================

Train a 64 × 25 RBM on the bundled 8 × 8 digits by PCD, then draw 36 samples by block
Gibbs sampling (SM08 Eq. 5-6, one random stream per chain) and the weights into each
hidden unit, in the grids ``cyrbm sample`` and ``cyrbm filters`` write.
"""
import matplotlib.pyplot as plt

import cyrbm
from cyrbm.images import filter_images, tile

X = cyrbm.load_data("digits:train")
model = cyrbm.Trainer(25, method="pcd", epochs=100, learning_rate=0.05, seed=0,
                      progress=False).fit(X)
samples = model.sample(36, steps=1000, seed=1)

fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
axes[0].imshow(tile(X[:36], (8, 8)), cmap="gray", interpolation="nearest")
axes[0].set_title("36 training digits")
axes[1].imshow(tile(samples, (8, 8)), cmap="gray", interpolation="nearest")
axes[1].set_title("36 samples, 1,000 Gibbs sweeps")
axes[2].imshow(tile(filter_images(model.W), (8, 8)), cmap="gray", interpolation="nearest")
axes[2].set_title("weights into the 25 hidden units")
for ax in axes:
    ax.set_axis_off()
plt.tight_layout()
