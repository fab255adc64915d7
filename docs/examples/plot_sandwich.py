"""
The AIS/RAISE sandwich
======================

Forward AIS tends to over-estimate a test log-probability, reverse annealing (RAISE)
to under-estimate it. On a 64 × 20 digits RBM both are run with schedules of increasing
length, beside the exact average test log-probability (ln Z by enumeration).
"""
import matplotlib.pyplot as plt

import cyrbm

X, X_test = cyrbm.load_data("digits:train"), cyrbm.load_data("digits:test")[:100]
model = cyrbm.Trainer(20, epochs=20, learning_rate=0.1, seed=0, progress=False).fit(X)
exact = model.log_unnormalized(X_test).mean() - cyrbm.exact_log_partition(model)

ks = [30, 100, 300, 1000]
ais, ais_se, rai, rai_se = [], [], [], []
for k in ks:
    ev = cyrbm.Annealer(runs=100, schedule=f"linear:{k}", seed=0).evaluate(
        model, X_test, base_rate="data", base_data=X, chains=2)
    ais.append(ev.ais_mean_log_prob)
    ais_se.append(3 * ev.ais_se)
    rai.append(ev.raise_mean_log_prob)
    rai_se.append(3 * ev.raise_se)

fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(ks, ais, yerr=ais_se, fmt="o-", capsize=3, label="forward AIS ± 3 se")
ax.errorbar(ks, rai, yerr=rai_se, fmt="s-", capsize=3, label="RAISE ± 3 se")
ax.axhline(exact, color="k", ls="--", label=f"exact {exact:.3f}")
ax.set_xscale("log")
ax.set_xlabel("intermediate distributions K")
ax.set_ylabel("mean test ln p(v), nats")
ax.legend()
plt.tight_layout()
