"""
AIS: ln Z against the number of runs
====================================

SM08's Figure 3 on a model small enough to enumerate: ln Ẑ of a 64 × 20 digits RBM from
the first n of 400 AIS runs (SM08 Eq. 13-18, 1,000 βs), with its ln(Ẑ ± 3σ̂) bars
(Eq. 12), beside the exact ln Z from enumerating the 2^20 hidden states. The same panel
is the first of ``cyrbm evaluate --plot``.
"""
import matplotlib.pyplot as plt
import numpy as np

import cyrbm
from cyrbm._plot import running_estimates

X = cyrbm.load_data("digits:train")
model = cyrbm.Trainer(20, epochs=20, learning_rate=0.1, seed=0, progress=False).fit(X)
exact = cyrbm.exact_log_partition(model)

res = cyrbm.Annealer(runs=400, schedule="linear:1000", seed=0).log_partition(
    model, base_rate="data", base_data=X)
n, est, lo, hi = map(np.array, zip(*running_estimates(res.log_weights, res.log_Z_base)))

fig, ax = plt.subplots(figsize=(6, 4))
ax.fill_between(n, np.maximum(lo, est.min() - 1), hi, alpha=0.3, label="ln(Ẑ ± 3σ̂)")
ax.plot(n, est, "o-", ms=3, label="AIS ln Ẑ")
ax.axhline(exact, color="k", ls="--", label=f"exact ln Z = {exact:.3f}")
ax.set_xscale("log")
ax.set_xlabel("AIS runs")
ax.set_ylabel("ln Z")
ax.legend()
plt.tight_layout()
print(f"exact ln Z {exact:.4f}; AIS with 400 runs {res.log_Z:.4f}, ESS {res.ess:.0f}")
