"""
The learning curve of parallel-tempering training
=================================================

Train a 64 × 16 RBM on the bundled 8 × 8 digits by parallel tempering with
``track_logz="filter"``: PT's own tracker (Desjardins, Courville & Bengio 2011,
:mod:`cyrbm.training.pt_tracking`) follows ln Z from the ladders' states, with a Kalman
filter over the temperatures, and gives the mean test ln p(v) at every epoch with its
error band (± 3 standard errors of ln Z). With 16 hidden units ln Z is also exact, drawn
as crosses: the tracked curve should hold it within its band.  (At learning rate 0.1
the updates outrun the chains, the importance weights degenerate and the tracked ln Z
drifts low: the records then carry ``overlap_warning``; see the user guide.)
"""
import matplotlib.pyplot as plt
import numpy as np

import cyrbm

X, T = cyrbm.load_data("digits:train"), cyrbm.load_data("digits:test")
exact = []
trainer = cyrbm.Trainer(16, method="pt", epochs=10, batch_size=20, learning_rate=0.02,
                        chains=50, temperatures=11, seed=0, progress=False,
                        track_logz="filter")
trainer.callback = lambda record: exact.append(trainer.model.log_partition())
trainer.fit(X, test_data=T)

h = trainer.history
epochs = np.array([r["epoch"] for r in h])
log_Z, se = np.array([r["log_Z"] for r in h]), np.array([r["log_Z_se"] for r in h])
ll = np.array([r["log_likelihood"] for r in h])
exact = np.array(exact)
exact_ll = ll + log_Z - exact

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
ax = axes[0]
ax.fill_between(epochs, log_Z - 3 * se, log_Z + 3 * se, alpha=0.3, label="± 3 se")
ax.plot(epochs, log_Z, "o-", ms=3, label="tracked")
ax.plot(epochs, exact, "x", color="k", label="exact")
ax.set_xlabel("epoch")
ax.set_ylabel("ln Z")
ax.legend()
ax = axes[1]
ax.fill_between(epochs, ll - 3 * se, ll + 3 * se, alpha=0.3, color="tab:green",
                label="± 3 se")
ax.plot(epochs, ll, "s-", ms=3, color="tab:green", label="tracked")
ax.plot(epochs, exact_ll, "x", color="k", label="exact")
ax.set_xlabel("epoch")
ax.set_ylabel("mean test ln p(v)")
ax.legend()
plt.tight_layout()
print("largest |tracked - exact| / se over the epochs:",
      round(float(np.max(np.abs(log_Z - exact) / se)), 2))
