"""Handlers of ``cyrbm dbn`` (greedy DBN training) and ``cyrbm bound`` (bounds on ln p(v)).

    cyrbm dbn DATA -o DBN --layers 500,2000 [per-layer training options] [--init-transpose]
              [--layer-input samples|probs] [--visible binary|gaussian] [--whiten KIND]
              [--top rbm|srbm] [--reconstruction mean-field|gibbs] [--json]
    cyrbm bound DBN --data DATA [--method variational|harmonic|chib|ais] [--samples M] [--entropy E]
                [--steps S] [--repeats R] [--trace] [--plot FILE]
                [--logz VALUE | --runs R --schedule S] [--seed S] [--threads T] [--json]

Training options of ``dbn`` (--method, --k, --epochs, --batch, --lr, --lr-decay, --momentum,
--weight-decay) take one value for every layer or one per layer, comma-separated;
--visible and --whiten are the bottom layer's, --top and --reconstruction the top's.
``bound`` applies the whitening a Gaussian bottom layer keeps to --data.  Every user error
is a CyrbmError of one sentence.
"""
import json
import math
import os
import sys
import time

from cyrbm.cli.options import (_data_file, _real, _whole, binarize_threshold,
                               default_checkpoint, parse_threads, scheduler_client)
from cyrbm.cli.train import _merge_resume, _train_settings, epoch_line
from cyrbm.errors import CyrbmError, stop_status, stop_word

_PER_LAYER = ("--method", "--k", "--epochs", "--batch", "--lr", "--lr-decay", "--momentum",
              "--weight-decay")


class DBNUsageError(CyrbmError, ValueError):
    """A dbn/bound command-line value that does not fit."""


def _layers(raw):
    try:
        sizes = [int(x, 10) for x in str(raw).split(",")]
    except ValueError:
        raise DBNUsageError(f"--layers must be hidden-layer sizes separated by commas, such as "
                            f"500,2000, not {raw!r}.") from None
    if not sizes or min(sizes) < 1:
        raise DBNUsageError(f"--layers needs sizes of at least 1 unit, not {raw!r}.")
    return sizes


def _per_layer_args(args, n):
    """One docopt-like args dict per layer, each option's value split at commas."""
    out = [dict(args) for _ in range(n)]
    for key in _PER_LAYER:
        raw = args.get(key)
        if raw is None:
            continue
        parts = str(raw).split(",")
        if len(parts) not in (1, n):
            raise DBNUsageError(f"{key} takes one value or one per layer ({n}), not "
                                f"{len(parts)} values ({raw!r}).")
        for l in range(n):
            out[l][key] = parts[0] if len(parts) == 1 else parts[l]
    return out


def cmd_dbn(args, out):
    from cyrbm.data.datasets import load_data
    from cyrbm.training.greedy import layer_checkpoint, progress_file, train_dbn, whitening_file
    sizes = _layers(args["--layers"])
    per = _per_layer_args(args, len(sizes))
    settings = []
    for l, a in enumerate(per):
        a["--hidden"] = str(sizes[l])
        if l > 0:
            a["--visible"] = "binary"            # --visible: the bottom layer's units
        settings.append(_train_settings(a))
    binarize = args["--binarize"]
    if binarize not in (None, "threshold", "stochastic"):
        raise DBNUsageError(f"--binarize must be threshold or stochastic, not {binarize!r}.")
    top = args.get("--top") or "rbm"
    if top not in ("rbm", "srbm"):
        raise DBNUsageError(f"--top must be rbm or srbm, not {top!r}.")
    reconstruction = args.get("--reconstruction")
    if reconstruction is not None and top != "srbm":
        raise DBNUsageError("--reconstruction is an option of an SRBM top; add --top srbm.")
    layer_input = args["--layer-input"] or "samples"
    if layer_input not in ("samples", "probs"):
        raise DBNUsageError(f"--layer-input must be samples or probs, not {layer_input!r}.")
    threads = parse_threads(args["--threads"])
    path = args["--output"]
    checkpoint = args["--checkpoint"] or default_checkpoint(path)
    from cyrbm import _io
    named = "--checkpoint" if args["--checkpoint"] else "-o"
    _io.check_outputs(
        [("-o", path, "npz")]
        + [(f"layer {l}'s checkpoint named after {named}", layer_checkpoint(checkpoint, l),
            "npz") for l in range(len(sizes))]
        + [(f"the file of finished layers named after {named}", progress_file(checkpoint),
            "npz"),
           (f"the whitening named after {named}", whitening_file(checkpoint), "npz")],
        [("the training data DATA", _data_file(args["DATA"]))])
    if args["--resume"]:
        settings, was_top = _resume_settings(settings, sizes, args, checkpoint, layer_input)
        if "--top" not in args["__explicit__"] and was_top is not None:
            top = was_top                        # left out: the run's own
        if reconstruction is None and top == "srbm":     # left out: the top's own
            reconstruction = _saved_reconstruction(layer_checkpoint(checkpoint,
                                                                    len(sizes) - 1))
    visible = settings[0]["visible"]              # the bottom's (resumed: the run's)
    for s in settings:
        s.pop("n_hidden")
        s.pop("visible")
    from cyrbm.models.kinds import model_class
    gaussian = model_class(visible, "--visible").real_valued
    if gaussian and binarize is not None:
        raise DBNUsageError("--binarize is for binary visible units, not --visible gaussian.")
    whiten = args.get("--whiten")
    if whiten is not None:
        from cyrbm.data.patches import WHITENINGS
        if not gaussian:
            raise DBNUsageError("--whiten is an option of Gaussian visible units; add "
                                "--visible gaussian.")
        if whiten not in WHITENINGS:
            raise DBNUsageError(f"--whiten must be one of {', '.join(WHITENINGS)}, not "
                                f"{whiten!r}.")
    seed = settings[0]["seed"]
    data = load_data(args["DATA"], binarize=binarize, threshold=binarize_threshold(args),
                     seed=seed, real=gaussian)
    # the whitening is kept beside the checkpoints, so that --resume (with or without
    # --whiten) transforms the data by the very same map
    wfile = whitening_file(checkpoint)
    whitening = (_kept_whitening(wfile, whiten)
                 if args["--resume"] and gaussian and os.path.isfile(wfile) else None)
    if whitening is None and whiten is not None:
        from cyrbm.data.patches import fit_whitening
        whitening = fit_whitening(data, whiten)
        arrays, record = whitening.to_arrays()
        _io.atomic_savez(wfile, {**arrays, "meta": _io.meta_to_array(record)})
    if whitening is not None:
        data = whitening.transform(data)
    quiet = args["--json"] or args["--no-progress"]

    def reporter(layer, epochs):
        def report(record):
            if not quiet:
                where = (f"layer {layer + 1}/{len(sizes)}, "
                         f"epoch {record['epoch']}/{epochs}")
                print(epoch_line(record, where), file=sys.stderr, flush=True)
        return report

    trainers = []
    for layer, s in enumerate(settings):
        s = dict(s)
        s["callback"] = reporter(layer, s["epochs"])
        s["progress"] = False if quiet else None
        s["threads"] = threads
        trainers.append(s)
    t0 = time.perf_counter()
    started = time.time()
    try:
        dbn = train_dbn(data, sizes, trainers=trainers, init_transpose=args["--init-transpose"],
                        seed=seed, checkpoint=checkpoint, resume=args["--resume"],
                        layer_input=layer_input, visible=visible, top=top,
                        **({} if reconstruction is None else
                           {"reconstruction": reconstruction}))
    except KeyboardInterrupt as exc:
        print(f"cyrbm dbn: {stop_word(exc)}: "
              f"{_kept_on_interrupt(checkpoint, len(sizes), args['--resume'], started)}",
              file=sys.stderr)
        return stop_status(exc)
    dbn.meta["training"]["data"] = args["DATA"]
    if whitening is not None:
        dbn.layers[0].whitening = whitening       # kept in the bottom layer's arrays
    dbn.save(path)
    result = {"model": path, "data": args["DATA"], "n_samples": int(data.shape[0]),
              "sizes": dbn.sizes, "init_transpose": bool(args["--init-transpose"]),
              "layer_input": layer_input, "visible": visible, "top": top,
              "whiten": None if whitening is None else whitening.kind,
              "seconds": time.perf_counter() - t0, "threads": threads,
              "checkpoints": [layer_checkpoint(checkpoint, l) for l in range(len(sizes))],
              "layers": [{k: v for k, v in s.items() if k not in ("callback", "progress")}
                         for s in trainers]}
    if args["--json"]:
        print(json.dumps(result))
    else:
        parts = ", ".join(["Gaussian visible units"] * gaussian + ["SRBM top"] * (top == "srbm"))
        print(f"trained a {'-'.join(str(s) for s in dbn.sizes)} DBN"
              f"{f' ({parts})' if parts else ''} greedily on "
              f"{data.shape[0]} rows of '{args['DATA']}' ({result['seconds']:.2f} s)", file=out)
        print(f"wrote {path}", file=out)
    return 0


def _saved_reconstruction(path):
    """The SRBM top's --reconstruction in its checkpoint ``path`` (None without one), so
    that a resume that leaves it out continues as the run began (the resume rule)."""
    from cyrbm import _io
    meta = _io.read_meta(path) if os.path.isfile(path) else None
    training = meta.get("training") if isinstance(meta, dict) else None
    saved = training.get("settings") if isinstance(training, dict) else None
    lateral = saved.get("lateral") if isinstance(saved, dict) else None
    return lateral.get("reconstruction") if isinstance(lateral, dict) else None


def _resume_settings(settings, sizes, args, checkpoint, layer_input):
    """Each layer's settings on --resume: those left out are the finished layer's or its
    checkpoint's; one given that differs from them is refused (cyrbm.cli.train._merge_resume), and so
    is a finished DBN or one without a checkpoint (greedy.resume_layers).  Also the
    run's top layer ("rbm", "srbm"; None when no layer is finished)."""
    from cyrbm.training.greedy import layer_checkpoint, progress_file, resume_layers
    done, record = resume_layers(checkpoint, sizes, layer_input=layer_input,
                                 init_transpose=args["--init-transpose"])
    explicit = args["__explicit__"]
    merged = []
    for l, s in enumerate(settings):
        if l < len(done):
            training = done[l].meta.get("training")
            saved = training.get("settings") if isinstance(training, dict) else None
            if isinstance(saved, dict):
                s, _ = _merge_resume(s, explicit, progress_file(checkpoint),
                                         saved=saved, finished=True, layer=l)
        else:
            s, _ = _merge_resume(s, explicit, layer_checkpoint(checkpoint, l))
        merged.append(s)
    return merged, record.get("top")


#: the options of 'cyrbm bound' that only some methods use (and --steps and --repeats:
#: chib and ais, --trace: chib, checked below with their own words)
_BOUND_OPTIONS = {"--samples": ("variational", "harmonic"), "--entropy": ("variational",),
                  "--checkpoint": ("chib", "ais"),
                  "--logz": ("variational", "chib", "ais"),
                  "--runs": ("variational", "chib", "ais"),
                  "--schedule": ("variational", "chib", "ais")}
_BOUND_WHY = {"--logz": " (the harmonic mean needs no ln Z)",
              "--runs": " (the AIS runs for ln Z; the harmonic mean needs no ln Z)",
              "--schedule": " (the AIS schedule for ln Z; the harmonic mean needs no ln Z)"}


def _kept_on_interrupt(checkpoint, n_layers, resume, started):
    """What an interrupted ``cyrbm dbn`` kept, naming only files that exist and belong
    to this run (or to the run it resumed): the finished layers' file and the current
    layer's checkpoint."""
    from cyrbm.training.greedy import layer_checkpoint, progress_file
    from cyrbm.models.dbn import DBN

    def ours(path):
        return os.path.isfile(path) and (resume or os.path.getmtime(path) >= started)

    done_file = progress_file(checkpoint)
    n_done = 0
    if ours(done_file):
        try:
            n_done = DBN.load(done_file).n_layers
        except (CyrbmError, ValueError, OSError):
            n_done = 0
    current = layer_checkpoint(checkpoint, n_done)
    finished = ("layer 1" if n_done == 1 else f"layers 1-{n_done}") + f" of {n_layers}"
    verb = "is" if n_done == 1 else "are"
    if n_done and ours(current):
        return (f"the finished {finished} {verb} in '{done_file}' and the state of layer "
                f"{n_done + 1} is in '{current}'; continue with --resume.")
    if n_done:
        return f"the finished {finished} {verb} in '{done_file}'; continue with --resume."
    if ours(current):
        return (f"no layer finished; the state of layer 1 is in '{current}'; continue with "
                f"--resume.")
    return "no layer finished, and no checkpoint was written."


def _kept_whitening(path, whiten):
    """The whitening a resumed ``cyrbm dbn`` run kept at ``path``; --whiten, when given
    again, must name its kind."""
    from cyrbm import _io
    from cyrbm.data.patches import Whitening
    arrays = _io.read_npz(path, "whitening file")
    record = _io.meta_from_array(arrays.get("meta", "{}"), path, "whitening file")
    whitening = Whitening.from_arrays(arrays, record)
    if whitening is None:
        raise DBNUsageError(f"'{path}' holds no whitening (remove it, or resume with the "
                            f"same --whiten as the run).")
    if whiten is not None and whiten != whitening.kind:
        raise DBNUsageError(f"the run being resumed whitened its data by {whitening.kind}, "
                            f"not {whiten}: resume with --whiten {whitening.kind}, or "
                            f"without --whiten.")
    return whitening


def _items_kept(checkpoint, started):
    """True when a stopped ``cyrbm bound`` wrote its --checkpoint (this run's file)."""
    return (checkpoint is not None and os.path.isfile(checkpoint)
            and os.path.getmtime(checkpoint) >= started - 1)


def cmd_bound(args, out, explicit=()):
    from cyrbm.estimators.bounds import BoundEstimator
    from cyrbm.models.dbn import DBN
    from cyrbm.data.datasets import load_data
    method = args["--method"] if "--method" in explicit else "variational"
    if method not in ("variational", "harmonic", "chib", "ais"):
        raise DBNUsageError(f"--method of 'cyrbm bound' must be variational, harmonic, chib "
                            f"or ais, not {method!r}.")
    for option, methods in _BOUND_OPTIONS.items():
        if option in explicit and method not in methods:
            names = ", ".join(methods[:-1]) + " and " * (len(methods) > 1) + methods[-1]
            raise DBNUsageError(f"{option} applies to --method {names}, not to {method}"
                                f"{_BOUND_WHY.get(option, '')}.")
    if method in ("chib", "ais"):
        from cyrbm import defaults
        steps = _whole(args, "--steps", 1) if "--steps" in explicit else (
            defaults.CHIB_STEPS if method == "chib" else defaults.AIS_PER_VECTOR_BETAS)
        repeats = (_whole(args, "--repeats", 2 if method == "ais" else 1)
                   if args["--repeats"] is not None else
                   (defaults.CHIB_REPEATS if method == "chib" else defaults.AIS_PER_VECTOR_RUNS))
    elif "--steps" in explicit or args["--repeats"] is not None:
        raise DBNUsageError("--steps and --repeats apply to --method chib and ais.")
    if args["--trace"] and method != "chib":
        raise DBNUsageError("--trace applies to --method chib.")
    if args["--plot"] is not None and not args["--trace"]:
        raise DBNUsageError("--plot of 'cyrbm bound' draws the --trace of --method chib.")
    raw = args["--samples"]
    if raw is None:
        from cyrbm import defaults
        M = defaults.VARIATIONAL_SAMPLES if method == "variational" else defaults.HARMONIC_SAMPLES
    else:
        try:
            M = int(str(raw), 10)
        except ValueError:
            raise DBNUsageError(f"--samples must be a whole number, not {raw!r}.") from None
        if M < 1:
            raise DBNUsageError(f"--samples must be at least 1 (samples of Q per vector), not {M}.")
    entropy = args["--entropy"] or "analytic"
    if entropy not in ("analytic", "sampled"):
        raise DBNUsageError(f"--entropy must be analytic or sampled, not {entropy!r}.")
    log_Z = _real(args, "--logz", optional=True)
    if log_Z is not None and ("--runs" in explicit or "--schedule" in explicit):
        raise DBNUsageError("--logz gives ln Z, so --runs and --schedule (for AIS) do not apply.")
    seed = _whole(args, "--seed", 0)
    threads = parse_threads(args["--threads"])
    checkpoint = args["--checkpoint"] if "--checkpoint" in explicit else None
    if checkpoint is not None and args.get("--scheduler"):
        raise DBNUsageError("--checkpoint keeps a run on this machine: give either "
                            "--scheduler or --checkpoint, not both.")
    from cyrbm import _io
    _io.check_outputs([("--plot", args["--plot"], "png"), ("--checkpoint", checkpoint, "npz")],
                      [("the DBN file DBN", args["DBN"]),
                       ("the data --data", _data_file(args["--data"])),
                       ("the schedule file --schedule", args["--schedule"])])
    t0 = time.perf_counter()
    dbn = DBN.load(args["DBN"])
    if args["--data"] is None:
        raise DBNUsageError("'cyrbm bound' needs --data DATA, the vectors to bound.")
    data = load_data(args["--data"], real=dbn.layers[0].real_valued)
    whitening = getattr(dbn.layers[0], "whitening", None)
    if whitening is not None:
        data = whitening.transform(data, name=f"--data {args['--data']}")
    annealer = None
    if log_Z is None and method in ("variational", "chib", "ais"):
        from cyrbm.estimators.annealing import Annealer
        annealer = Annealer(runs=_whole(args, "--runs", 2), schedule=args["--schedule"],
                            seed=seed, threads=threads, progress=False if args["--json"] else None)
    est = BoundEstimator(dbn, log_Z=log_Z, annealer=annealer, seed=seed, threads=threads)
    if method in ("chib", "ais") and dbn.n_layers != 2:
        raise DBNUsageError(f"--method {method} is for a DBN of two layers; "
                            f"'{args['DBN']}' has {dbn.n_layers}.")
    trace = None
    started = time.time()
    try:
        with scheduler_client(args) as client:
            if method == "variational":
                res = est.variational(data, M, entropy=entropy, client=client)
            elif method == "harmonic":
                res = est.harmonic(data, M, client=client)
            elif method == "chib":
                res = est.chib(data, steps, repeats, client=client, checkpoint=checkpoint)
                if args["--trace"]:
                    from cyrbm.estimators.chib import TRACE_STEPS, chib_trace
                    grid = [s for s in TRACE_STEPS if s < steps] + [steps]
                    trace = chib_trace(dbn, data, est.log_Z_value, steps=grid, repeats=repeats,
                                       seed=seed, threads=threads, client=client)
                    if args["--plot"] is not None:
                        trace.plot(args["--plot"])
            else:
                res = est.ais_per_vector(data, repeats, schedule=f"linear:{steps}", client=client,
                                         checkpoint=checkpoint)
    except KeyboardInterrupt as exc:
        if not _items_kept(checkpoint, started):
            raise
        print(f"cyrbm bound: {stop_word(exc)}: the finished vectors are in '{checkpoint}'; "
              f"run the same command again to go on.", file=sys.stderr)
        return stop_status(exc)
    result = {"command": "bound", "model": args["DBN"], "data": args["--data"],
              "sizes": dbn.sizes}
    result.update(res.to_dict(values=False))
    if whitening is not None:       # ln p of the pixels: the whitened data's + ln|det A|
        result["whitening"] = {"kind": whitening.kind, "log_det": whitening.log_det}
        result["mean_pixels"] = res.mean + whitening.log_det
    if trace is not None:
        result["trace"] = trace.to_dict()
    result["seconds"] = time.perf_counter() - t0
    if args["--json"]:
        print(json.dumps(result))
        return 0
    lo, hi = res.interval(3)
    if method == "variational":
        print(f"variational lower bound (SM08 Eq. 24), average over {res.n_data} rows of "
              f"'{args['--data']}': {res.mean:.4f} nats", file=out)
        print(f"  Monte Carlo error (+-3 std): +-{3 * res.stderr:.4f}   "
              f"M = {M} sample{'s' if M > 1 else ''} of Q per vector, entropy {entropy}", file=out)
        _print_log_z(res, out)
    elif method in ("chib", "ais"):
        what = (f"Chib-style estimate (MS09 Figure 1), S = {steps}, {repeats} repeat"
                f"{'s' if repeats > 1 else ''} per vector" if method == "chib" else
                f"per-vector AIS over h1 (MS09 Sec. 5.1), {repeats} runs of {steps} betas")
        print(f"ln p(v) by the {what}, average over {res.n_data} rows of "
              f"'{args['--data']}': {res.mean:.4f} nats", file=out)
        mc = "" if res.mc_stderr is None else f", of which Monte Carlo {res.mc_stderr:.4f}"
        print(f"  standard error {res.stderr:.4f}{mc}", file=out)
        _print_log_z(res, out)
        if trace is not None:
            print(trace.table(), file=out)
            if args["--plot"] is not None:
                print(f"  wrote {args['--plot']}", file=out)
    else:
        print(f"harmonic-mean estimate of ln p(v) (MS09 Eq. 2; it over-estimates), average "
              f"over {res.n_data} rows of '{args['--data']}': {res.mean:.4f} nats "
              f"(+-3 std {3 * res.stderr:.4f}), M = {M}", file=out)
    if whitening is not None:
        from cyrbm.cli.measure import _print_pixels
        _print_pixels(result, "mean", out, "  ")
    print(f"  {result['seconds']:.2f} s", file=out)
    return 0


def _print_log_z(res, out):
    """The ln Z-hat a result used, with its AIS error ln(Z +- 3 sigma) - ln Z apart."""
    shift = res.ais_interval(3)
    if res.ais is not None:
        up = "+inf" if not math.isfinite(shift[1]) else f"{shift[1]:+.4f}"
        print(f"  AIS error ln(Z +- 3 sigma) - ln Z: {shift[0]:+.4f}, {up}   ln Z = "
              f"{res.log_Z:.4f} ({res.ais.runs} runs, {res.ais.betas} betas)", file=out)
    else:
        print(f"  ln Z = {res.log_Z:.4f} (given)", file=out)


def dbn_info(path, arrays, out, as_json):
    """``cyrbm info`` for a DBN file."""
    from cyrbm import _io
    from cyrbm.models.dbn import DBN
    dbn = DBN.from_arrays(arrays, path)
    meta = _io.meta_from_array(arrays["meta"], path) if "meta" in arrays else {}
    info = {"model": path, "kind": "dbn", "visible": dbn.visible, "top": dbn.top_kind,
            "sizes": dbn.sizes,
            "n_layers": dbn.n_layers,
            "n_visible": dbn.n_visible, "dtype": dbn.dtype.name,
            "format_version": meta.get("format_version"), "written_by": meta.get("cyrbm_version"),
            "training": dbn.meta.get("training", {}),
            "layers": [{"n_visible": r.n_visible, "n_hidden": r.n_hidden,
                        "training": {k: v for k, v in r.meta.get("training", {}).items()
                                     if k != "history"}} for r in dbn.layers]}
    if as_json:
        print(json.dumps(info))
        return 0
    bottom = ", Gaussian visible units" if dbn.layers[0].real_valued else ""
    lateral = dbn.top_kind == "lateral"
    print(f"{path}: DBN {'-'.join(str(s) for s in dbn.sizes)} ({dbn.n_layers} layers"
          f"{bottom}, top {'SRBM' if lateral else 'RBM'} {dbn.top.n_visible} x "
          f"{dbn.top.n_hidden}{' with lateral connections' if lateral else ''}), "
          f"{dbn.dtype.name}", file=out)
    if meta:
        print(f"  format version {meta.get('format_version')}, written by cyrbm "
              f"{meta.get('cyrbm_version')}", file=out)
    for l, r in enumerate(info["layers"]):
        st = r["training"].get("settings") or {}
        how = (f", trained by {str(st.get('method', '?')).upper()}-{st.get('k')}, "
               f"{r['training'].get('epochs_done')} epochs" if st else "")
        print(f"  layer {l}: {r['n_visible']} x {r['n_hidden']}{how}", file=out)
    return 0


__all__ = ["cmd_dbn", "cmd_bound", "dbn_info", "DBNUsageError"]


def _dbn_command(name):
    def run(args, out):
        if name == "bound":
            return cmd_bound(args, out, args.get("__explicit__", ()))
        return cmd_dbn(args, out)
    return run
