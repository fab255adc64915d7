"""Handler of ``cyrbm sweep CONFIG -o DIR [--scheduler ADDRESS]``: train and measure every
configuration of a grid (cyrbm.sweep), on a Dask cluster with --scheduler."""
import json

from cyrbm.cli.options import scheduler_client


def cmd_sweep(args, out):
    from cyrbm.sweep import sweep_from_config
    progress = False if (args["--no-progress"] or args["--json"]) else None
    with scheduler_client(args) as client:
        result = sweep_from_config(args["CONFIG"], args["--output"], client=client,
                                   progress=progress)
    result["output"] = args["--output"]
    if args["--json"]:
        print(json.dumps(result))
        return 0
    print(f"{'name':<12} {'avg log-prob':>12}  {'3 sigma interval':<22} {'ln Z':>10}  settings",
          file=out)
    for r in result["rows"]:
        lp = "n/a" if r["avg_log_prob"] is None else f"{r['avg_log_prob']:.4f}"
        lo, hi = r["avg_log_prob_3sigma_low"], r["avg_log_prob_3sigma_high"]
        interval = "n/a" if lo is None or hi is None else f"[{lo:.4f}, {hi:.4f}]"
        print(f"{r['name']:<12} {lp:>12}  {interval:<22} {r['log_Z']:>10.4f}  "
              f"{json.dumps(r['settings'], sort_keys=True)}", file=out)
    print(f"best: {result['best']} (highest average test log-probability); results.json, "
          f"results.csv and models/ written to '{args['--output']}'", file=out)
    return 0
