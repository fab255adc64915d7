"""Handlers of the measuring commands ``cyrbm ais``, ``cyrbm ratio`` and ``cyrbm logz``.

Each takes the docopt arguments dict and returns a JSON-ready dict (keys documented in
docs/json_keys_ais.md); :func:`_measure` prints it.  Usage lines (in cli/parse.py):

    cyrbm ais MODEL [--data DATA] [--base-data DATA] [--runs R] [--schedule SCHED] [--seed S] [--threads T] [--json] [--scheduler ADDRESS]
    cyrbm ratio MODEL_A MODEL_B [--data DATA] [--runs R] [--schedule SCHED] [--start HOW] [--burn-in N] [--chains C] [--steps-between N] [--seed S] [--threads T] [--json]
    cyrbm logz MODEL --exact [--threads T] [--json]
    cyrbm evaluate MODEL --data DATA [...] [--base-model A] [--base-logz VALUE] [--start HOW] [--burn-in N]

Defaults: those of the API (cyrbm.defaults), as the usage text states them; --chains R
(one per run).  DATA is anything
``cyrbm.data.datasets.load_data`` reads (a file or a bundled data set such as "digits").
Every user error is raised as a CyrbmError whose message is one sentence.
"""
import json
import time

from cyrbm.cli.options import (_data_file, _interval, _real, load_model, parse_threads,
                               scheduler_client)
from cyrbm import defaults
from cyrbm.estimators.annealing import AnnealingError, Annealer, exact_log_partition
from cyrbm.data.datasets import load_data
from cyrbm.models.rbm import RBM

DEFAULTS = {"--runs": str(defaults.AIS_RUNS), "--schedule": defaults.SCHEDULE,
            "--seed": str(defaults.SEED), "--burn-in": str(defaults.RATIO_BURN_IN),
            "--steps-between": str(defaults.RATIO_STEPS_BETWEEN),
            "--start": defaults.RATIO_START}


def _opt(args, key):
    value = args.get(key)
    return DEFAULTS.get(key) if value is None else value


def _whole(args, key, minimum, what):
    raw = _opt(args, key)
    try:
        value = int(str(raw), 10)
    except (TypeError, ValueError):
        raise AnnealingError(f"{key} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise AnnealingError(f"{key} must be at least {minimum} ({what}), not {value}.")
    return value


def _threads(args):
    return parse_threads(args.get("--threads"))


def _data(args, key, model=None):
    """The rows of option ``key`` (None when not given): 0/1 rows, or for a Gaussian RBM
    real rows, through the model's whitening when its file holds one."""
    source = args.get(key)
    if source is None:
        return None
    if getattr(model, "visible", "binary") != "gaussian":
        return load_data(source)
    data = load_data(source, real=True)
    whitening = model.whitening
    return data if whitening is None else whitening.transform(data, name=f"{key} {source}")


def _pixel_space(out, model):
    """With a whitened Gaussian RBM: its whitening, and the mean ln p of the data in
    pixel space (the whitened one plus ln|det A|) beside the whitened one."""
    whitening = getattr(model, "whitening", None)
    if whitening is None:
        return out
    out["whitening"] = {"kind": whitening.kind, "log_det": whitening.log_det}
    if out.get("avg_log_prob") is not None:
        out["avg_log_prob_pixels"] = out["avg_log_prob"] + whitening.log_det
    return out


def run_ais(args):
    """``cyrbm ais``: ln Z of MODEL by AIS from a base-rate model (SM08 Eq. 13-18).

    The base rate is fitted to --base-data, else to --data, else it is zero.  With
    --data the average log-probability of DATA is reported too.
    """
    model = load_model(args["MODEL"])
    runs = _whole(args, "--runs", 2, "AIS needs two runs to estimate its error")
    seed = _whole(args, "--seed", 0, "seeds are non-negative")
    annealer = Annealer(runs=runs, schedule=_opt(args, "--schedule"), seed=seed,
                        threads=_threads(args), progress=None)
    data = _data(args, "--data", model)
    base_data = _data(args, "--base-data", model)
    fit_to = base_data if base_data is not None else data
    with scheduler_client(args) as client:
        result = annealer.log_partition(model, base_rate=None if fit_to is None else "data",
                                        data=data, base_data=fit_to, client=client)
    out = {"command": "ais", "model": str(args["MODEL"]), "n_visible": model.n_visible,
           "n_hidden": model.n_hidden, "data": args.get("--data"),
           "base_data": args.get("--base-data") or args.get("--data")}
    out.update(result.to_dict())
    return _pixel_space(out, model)


def run_ratio(args):
    """``cyrbm ratio``: ln(Z_B / Z_A) of MODEL_B over MODEL_A by AIS (SM08 Sec. 3.2).

    MODEL_A and MODEL_B are two binary RBMs, two Gaussian RBMs or two SRBMs (their
    files say which).  The runs start from exact draws of MODEL_A when the layer its
    exact ln Z enumerates (a binary RBM's smaller layer, a Gaussian RBM's hidden layer, an
    SRBM's visible layer) has at most 20 units (--start auto, the default, or exact),
    which also gives ln Z_A and so ln Z_B-hat;
    otherwise (or with --start gibbs) by block Gibbs sampling: --chains chains (default
    one per run) started at --data rows (or random bits), each run for --burn-in sweeps
    and then giving a state every --steps-between sweeps.  With --data, the mean of
    ln p_B(v) - ln p_A(v) is reported.
    """
    model_a = load_model(args["MODEL_A"])
    model_b = load_model(args["MODEL_B"])
    runs = _whole(args, "--runs", 2, "AIS needs two runs to estimate its error")
    seed = _whole(args, "--seed", 0, "seeds are non-negative")
    given = args.get("__explicit__")
    if given is None:            # a dict of the options given alone (as tests build)
        given = {key for key, value in args.items() if value is not None}
    # given only (log_ratio refuses them with exact starts; their defaults are its own)
    burn_in = _whole(args, "--burn-in", 0, "sweeps") if "--burn-in" in given else None
    steps_between = (_whole(args, "--steps-between", 1, "sweeps")
                     if "--steps-between" in given else None)
    # --start and the range of --chains: log_ratio's checks (one rule, said as options)
    chains = None if args.get("--chains") is None else _whole(args, "--chains", 1, "chains")
    start = _opt(args, "--start")
    threads = _threads(args)
    annealer = Annealer(runs=runs, schedule=_opt(args, "--schedule"), seed=seed,
                        threads=threads, progress=None)
    data = _data(args, "--data", model_a)
    with scheduler_client(args) as client:
        result = annealer.log_ratio(model_a, model_b, data=data, start=start,
                                    burn_in=burn_in, chains=chains,
                                    steps_between=steps_between, client=client)
    out = {"command": "ratio", "model_a": str(args["MODEL_A"]), "model_b": str(args["MODEL_B"]),
           "n_visible": model_a.n_visible, "data": args.get("--data"),
           "base_data": None, "base_rate": None}      # the runs start from MODEL_A
    out.update(result.to_dict())
    return out


def run_logz(args):
    """``cyrbm logz --exact``: ln Z of MODEL by summing over its smaller layer."""
    if not args.get("--exact"):
        raise AnnealingError("cyrbm logz computes ln Z exactly only; add --exact, or use "
                             "'cyrbm ais' for an estimate.")
    from cyrbm._omp import resolve_threads
    model = load_model(args["MODEL"])
    threads = resolve_threads(_threads(args))        # as exact_log_partition resolves it
    layer, units = model.exact_layer()
    t0 = time.perf_counter()
    log_z = exact_log_partition(model, threads=threads)
    return {"command": "logz", "method": "exact", "model": str(args["MODEL"]),
            "n_visible": model.n_visible, "n_hidden": model.n_hidden,
            "log_Z": log_z, "terms": 2 ** units, "enumerated_layer": layer,
            "seconds": time.perf_counter() - t0, "threads": threads}


__all__ = ["run_ais", "run_ratio", "run_logz"]


def run_evaluate(args):
    """``cyrbm evaluate``: the AIS/RAISE sandwich of MODEL on DATA (cyrbm.estimators.evaluation).

    --schedule adaptive:K tunes K betas by a pilot run (least var(ln w)) and
    --save-schedule FILE keeps them for reuse (--schedule FILE); --simulate N adds the
    bidirectional check on N states drawn from the model; --plot FILE.png draws ln Z-hat
    against the number of runs, the log weights and the gap against K.
    """
    from cyrbm import _io
    from cyrbm.estimators import evaluation
    from cyrbm.estimators.annealing import base_rate_biases
    _io.check_outputs(
        [("--save-schedule", args.get("--save-schedule"), "text"),
         ("--plot", args.get("--plot"), "png")],
        [("the model file MODEL", args["MODEL"]),
         ("the data --data", _data_file(args.get("--data"))),
         ("the data --base-data", _data_file(args.get("--base-data"))),
         ("the model --base-model", args.get("--base-model")),
         ("the schedule file --schedule", args.get("--schedule"))])
    model = load_model(args["MODEL"])
    if getattr(model, "_sandwich_runs", None) is not None:     # its own AIS and RAISE
        return _run_evaluate_own(args, model)
    runs = _whole(args, "--runs", 2, "AIS needs two runs to estimate its error")
    seed = _whole(args, "--seed", 0, "seeds are non-negative")
    chains = (10 if args.get("--chains") is None
              else _whole(args, "--chains", 1, "reverse chains per test vector"))
    simulate = (None if args.get("--simulate") is None
                else _whole(args, "--simulate", 1, "states drawn from the model"))
    threads = _threads(args)
    spec = _opt(args, "--schedule")
    base_model, base_kw = _evaluate_base(args)
    data = _data(args, "--data")
    if data is None:
        raise AnnealingError("cyrbm evaluate needs --data DATA, the test vectors.")
    base_data = _data(args, "--base-data")
    V = model._visible_data(data, "data")
    fit_to = base_data if base_data is not None else V
    bA = base_rate_biases(fit_to, n_visible=model.n_visible)
    n_adaptive = evaluation.parse_adaptive(spec)
    if n_adaptive is not None and base_model is not None:
        raise AnnealingError("--schedule adaptive:K tunes the path from a base-rate model; "
                             "with --base-model give paper, linear:K or a file of betas.")
    t0 = time.perf_counter()
    schedule = spec
    if n_adaptive is not None:
        schedule = evaluation.adaptive_schedule(model, n_adaptive, bA, seed=seed,
                                                threads=threads)
    tune_seconds = time.perf_counter() - t0
    annealer = Annealer(runs=runs, schedule=schedule, seed=seed, threads=threads,
                        progress=None)
    annealer.schedule_spec = spec
    if args.get("--save-schedule"):
        evaluation.save_schedule(args["--save-schedule"], annealer.betas)
    with scheduler_client(args) as client:
        result = annealer.evaluate(model, V, base_rate=bA, chains=chains, simulate=simulate,
                                   base_model=base_model, client=client, **base_kw)
    if base_model is None:
        result.ais.extra["base_rate"] = "data"
        result.base["base_rate"] = "data"
    else:
        result.base["model"] = str(args["--base-model"])
        if result.base["log_Z_source"] == "ais":
            result.base["base_rate"] = "data"
    out = {"command": "evaluate", "model": str(args["MODEL"]), "n_visible": model.n_visible,
           "n_hidden": model.n_hidden, "data": args.get("--data"),
           "base_data": args.get("--base-data") or args.get("--data")}
    out.update(result.to_dict())
    out["schedule_seconds"] = tune_seconds if n_adaptive is not None else None
    out["saved_schedule"] = args.get("--save-schedule")
    out["plot"] = None
    if args.get("--plot"):
        from cyrbm import _plot
        if base_model is not None:
            base_kw["base_log_Z"] = result.ais.log_Z_base     # ln Z_A once, not per K
        curve = evaluation.gap_curve(annealer, model, V, bA, result, chains=chains,
                                     base_model=base_model, **base_kw)
        _plot.write_evaluation_plot(args["--plot"], result, curve)
        out["plot"] = args["--plot"]
        out["gap_by_betas"] = [[int(k), float(g), float(se)] for k, g, se in curve]
    return out


def _run_evaluate_own(args, model):
    """``cyrbm evaluate`` of a Gaussian RBM or an SRBM: forward AIS and RAISE from a base
    fitted to --base-data (default --data): independent Gaussians, through the model's
    whitening, or an SRBM's base rate."""
    kind = model.noun
    for key in ("--base-model", "--base-logz", "--start", "--burn-in", "--simulate",
                "--plot", "--scheduler"):
        if args.get(key) is not None:
            raise AnnealingError(f"{key} is an option of evaluate for binary RBMs, not yet "
                                 f"for {kind}.")
    spec = _opt(args, "--schedule")
    from cyrbm.estimators import evaluation
    if evaluation.parse_adaptive(spec) is not None:
        raise AnnealingError(f"--schedule adaptive:K tunes binary RBMs' paths; give "
                             f"{kind} paper, linear:K or a file of betas.")
    annealer = Annealer(runs=_whole(args, "--runs", 2, "AIS needs two runs to estimate its "
                                    "error"),
                        schedule=spec, seed=_whole(args, "--seed", 0, "seeds are non-negative"),
                        threads=_threads(args), progress=None)
    if args.get("--save-schedule"):
        evaluation.save_schedule(args["--save-schedule"], annealer.betas)
    chains = (10 if args.get("--chains") is None
              else _whole(args, "--chains", 1, "reverse chains per test vector"))
    result = annealer.evaluate(model, _data(args, "--data", model), base_rate="data",
                               base_data=_data(args, "--base-data", model), chains=chains)
    out = {"command": "evaluate", "model": str(args["MODEL"]), "n_visible": model.n_visible,
           "n_hidden": model.n_hidden, "data": args.get("--data"),
           "base_data": args.get("--base-data") or args.get("--data")}
    out.update(result.to_dict())
    out.update({"schedule_seconds": None, "saved_schedule": args.get("--save-schedule"),
                "plot": None})
    if getattr(model, "whitening", None) is not None:
        out["whitening"] = _pixel_space({}, model)["whitening"]
        for part in ("ais", "raise"):
            if out[part].get("mean_log_prob") is not None:
                out[part]["mean_log_prob_pixels"] = (out[part]["mean_log_prob"]
                                                     + model.whitening.log_det)
    return out


def _evaluate_base(args):
    """(RBM A or None, evaluate's base_log_Z / start / burn_in) from --base-model,
    --base-logz, --start and --burn-in (the last two as for ``cyrbm ratio``)."""
    if args.get("--base-model") is None:
        if args.get("--base-logz") is not None:
            raise AnnealingError("--base-logz is ln Z of --base-model: give --base-model A "
                                 "too.")
        for key in ("--start", "--burn-in"):
            if args.get(key) is not None:
                raise AnnealingError(f"{key} sets how the runs from --base-model start: give "
                                     "--base-model A too (without it they start from the "
                                     "base-rate model, exactly).")
        return None, {}
    base_model = RBM.load(args["--base-model"])
    log_z = _real(args, "--base-logz", optional=True)
    start = _opt(args, "--start")
    if start not in ("auto", "exact", "gibbs"):
        raise AnnealingError(f"--start must be auto, exact or gibbs, not {start!r}.")
    if args.get("--base-data") is not None:
        from cyrbm.estimators.annealing import EXACT_START_UNITS
        small = min(base_model.n_visible, base_model.n_hidden) <= EXACT_START_UNITS
        if log_z is not None or small or start == "exact":
            how = "given by --base-logz" if log_z is not None else "exact"
            raise AnnealingError(f"--base-data fits the base-rate model from which ln Z of "
                                 f"--base-model is estimated by AIS, but here that ln Z is "
                                 f"{how}, so it would be ignored.")
    return base_model, {"base_log_Z": log_z, "start": start,
                        "burn_in": (None if args.get("--burn-in") is None
                                    else _whole(args, "--burn-in", 0, "sweeps"))}


def _fmt(x, spec=".4f"):
    return "n/a" if x is None else format(x, spec)


def print_evaluate(r, out):
    """``cyrbm evaluate`` as readable lines."""
    a, s = r["ais"], r["raise"]
    print(f"mean test log-probability of {r['n_data']} rows of '{r['data']}' "
          f"({r['betas']} betas, {r['schedule']}):", file=out)
    base = r.get("base") or {}
    if base.get("kind") == "model":
        how = {"given": "given", "exact": "exact",
               "ais": "by AIS from the base rate"}[base["log_Z_source"]]
        starts = ("exact draws" if base["start"] == "exact" else
                  f"Gibbs chains, {base['burn_in']} sweeps of burn-in")
        print(f"  on the path of the ratio from '{base.get('model', 'model A')}' "
              f"({base['n_hidden']} hidden units; starts: {starts}): "
              f"ln(Z_B/Z_A) = {_fmt(base['log_ratio'])}, ln Z_A = {_fmt(base['log_Z'])} "
              f"({how}; the gap does not depend on it)", file=out)
        if base.get("log_Z_weight_warning"):
            print(f"warning: AIS of ln Z_A: {base['log_Z_weight_warning']}", file=out)
    print(f"  AIS   (optimistic)  : {_fmt(a['mean_log_prob'])} nats  +- {_fmt(a['se'])} (se), "
          f"3 sigma {_interval(a['mean_log_prob_3sigma_interval'])}  "
          f"[{a['runs']} runs, ESS {_fmt(a['ess'], '.1f')}, {a['seconds']:.2f} s]", file=out)
    print(f"  RAISE (conservative): {_fmt(s['mean_log_prob'])} nats  +- {_fmt(s['se'])} (se), "
          f"3 sigma {_interval(s['mean_log_prob_3sigma_interval'])}  "
          f"[{s['chains']} chains per row, {s['seconds']:.2f} s]", file=out)
    _print_pixels(a, "mean_log_prob", out, "  AIS   ", r.get("whitening"))
    _print_pixels(s, "mean_log_prob", out, "  RAISE ", r.get("whitening"))
    print(f"  gap (AIS - RAISE)   : {_fmt(r['gap'])} nats  +- {_fmt(r['gap_se'])}", file=out)
    if r["disagreement"]:
        print(f"note: {r['disagreement']}", file=out)
    else:
        print("  AIS and RAISE agree within 3 standard errors.", file=out)
    if a["weight_warning"]:
        print(f"warning: AIS: {a['weight_warning']}", file=out)
    sim = r.get("simulate")
    if sim:
        print(f"simulated data: {sim['summary']}", file=out)
    if r.get("saved_schedule"):
        print(f"schedule saved to '{r['saved_schedule']}'", file=out)
    if r.get("plot"):
        print(f"plot written to '{r['plot']}'", file=out)


__all__ += ["run_evaluate", "print_evaluate"]


def print_measure(name, r, out):
    """The result of ais / ratio / logz as readable lines."""
    if name == "logz":
        print(f"ln Z = {r['log_Z']:.6f}  (exact, {r['terms']} terms over the "
              f"{r['enumerated_layer']} layer, {r['seconds']:.2f} s)", file=out)
        return
    if name == "evaluate":
        print_evaluate(r, out)
        return
    _print_measure_estimate(name, r, out)
    if r.get("weight_warning"):
        print(f"warning: {r['weight_warning']}", file=out)


def _print_measure_estimate(name, r, out):
    z = "Z" if name == "ais" else "Z_B"

    def log_z_line(extra=""):
        print(f"ln {z} = {r['log_Z']:.4f}  ln({z} +- sigma) {_interval(r['log_Z_sigma_interval'])}  "
              f"ln({z} +- 3 sigma) {_interval(r['log_Z_3sigma_interval'])}{extra}", file=out)

    if name == "ais":
        log_z_line()
        runs = f"AIS from a base-rate model ({r['base_rate']}): {r['runs']} runs"
        average = f"average test log-probability of {r['n_data']} rows of '{r['data']}'"
    else:
        print(f"ln(Z_B / Z_A) = {r['log_ratio']:.4f}  +- sigma "
              f"{_interval(r['log_ratio_sigma_interval'])}  +- 3 sigma "
              f"{_interval(r['log_ratio_3sigma_interval'])}", file=out)
        starts = ("exact draws of MODEL_A" if r.get("start") == "exact" else
                  f"{r.get('chains')} Gibbs chains on MODEL_A, {r.get('burn_in')} sweeps of "
                  f"burn-in")
        runs = f"{r['runs']} runs from {starts}"
        average = f"average of ln p_B(v) - ln p_A(v) over {r['n_data']} rows of '{r['data']}'"
    print(f"  {runs}, {r['betas']} betas ({r['schedule']}), effective sample size "
          f"{r['ess']:.1f}, {r['seconds']:.2f} s", file=out)
    if name != "ais" and r.get("log_Z") is not None:
        log_z_line(f"  (ln Z_A = {r['log_Z_base']:.4f}, exact)")
    if r.get("avg_log_prob") is not None:
        print(f"{average}: {r['avg_log_prob']:.4f} nats, 3 sigma interval "
              f"{_interval(r['avg_log_prob_3sigma_interval'])}", file=out)
    _print_pixels(r, "avg_log_prob", out)


def _print_pixels(r, key, out, indent="", whitening=None):
    """The line of a whitened Gaussian RBM's mean ln p in pixel space."""
    if r.get(f"{key}_pixels") is not None:
        w = whitening or r["whitening"]
        print(f"{indent}in pixel space ({w['kind']} whitening, + ln|det A| = "
              f"{w['log_det']:.4f}): {r[key + '_pixels']:.4f} nats", file=out)


def _measure(name):
    def run(args, out):
        result = globals()[f"run_{name}"](args)
        if args["--json"]:
            print(json.dumps(result))
        else:
            print_measure(name, result, out)
        return 0
    return run
