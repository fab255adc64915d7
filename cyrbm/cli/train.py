"""``cyrbm train``: settings from the options, resume rules, the epoch lines."""
import json
import os
import sys
import time

from cyrbm.errors import stop_status, stop_word
from cyrbm.cli.options import UsageError, _data_file, _real, _whole, binarize_threshold, default_checkpoint, parse_threads


# -------------------------------------------------------------------------- train
# option -> (Trainer setting, how to read it from the command line)
_TRAIN_SETTINGS = {
    "--hidden": "n_hidden", "--method": "method", "--k": "k", "--epochs": "epochs",
    "--batch": "batch_size", "--lr": "learning_rate", "--lr-decay": "lr_decay",
    "--momentum": "momentum", "--weight-decay": "weight_decay", "--seed": "seed",
    "--dtype": "dtype", "--monitor": "monitor_size",
    "--temperatures": "temperatures", "--chains": "chains", "--hop-prob": "hop_prob",
    "--modes": "modes", "--radius": "radius", "--hop-weight": "hop_weight",
    "--swap-threshold": "swap_threshold", "--max-rungs": "max_rungs", "--visible": "visible",
}


def _train_settings(args):
    """The Trainer settings from the options, each checked and named by its option."""
    from cyrbm.training.trainer import METHODS, parse_k
    method = args["--method"]
    if method not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}, not {method!r}.")
    temperatures = args.get("--temperatures")
    if temperatures is not None:
        from cyrbm.models.tempering import parse_temperatures
        try:
            parse_temperatures(temperatures)
        except ValueError as e:
            raise UsageError(f"--temperatures {temperatures}: {e}") from None
    hop_weight = args.get("--hop-weight")
    if hop_weight is not None and hop_weight not in ("uniform", "prob", "distance"):
        raise UsageError(f"--hop-weight must be uniform, prob or distance, not {hop_weight!r}.")
    try:
        k_first, k_last = parse_k(args["--k"])
    except ValueError as e:
        if "ramp" in str(e):
            raise UsageError(f"--k {args['--k']}: {e}") from None
        raise UsageError(f"--k must be a whole number of at least 1, or FIRST:LAST such as "
                         f"1:25, not {args['--k']!r}.") from None
    dtype = args["--dtype"]
    if dtype not in ("float32", "float64"):
        raise UsageError(f"--dtype must be float32 or float64, not {dtype!r}.")
    visible = args.get("--visible") or "binary"
    if visible not in ("binary", "gaussian"):
        raise UsageError(f"--visible must be binary or gaussian, not {visible!r}.")
    return {
        "n_hidden": _whole(args, "--hidden", 1),
        "method": method,
        "k": k_first if k_first == k_last else f"{k_first}:{k_last}",
        "epochs": _whole(args, "--epochs", 1),
        "batch_size": _whole(args, "--batch", 1),
        "learning_rate": _real(args, "--lr", low=0, low_open=True),
        "lr_decay": _real(args, "--lr-decay", low=0, low_open=True, optional=True),
        "momentum": _real(args, "--momentum", low=0, high=1, high_open=True),
        "weight_decay": _real(args, "--weight-decay", low=0),
        "seed": _whole(args, "--seed", 0),
        "dtype": dtype, "visible": visible,
        "monitor_size": ("auto" if args["--monitor"] == "auto"
                         else _whole(args, "--monitor", 0, what=" (or auto)")),
        # the options of PT and AMH, only when given (Trainer's defaults otherwise)
        **{key: value for key, value in (
            ("temperatures", temperatures),
            ("chains", _whole(args, "--chains", 1, optional=True)),
            ("hop_prob", _real(args, "--hop-prob", low=0, high=1, optional=True)),
            ("modes", _whole(args, "--modes", 1, optional=True)),
            ("radius", _whole(args, "--radius", 0, optional=True)),
            ("hop_weight", hop_weight),
            ("swap_threshold", _real(args, "--swap-threshold", low=0, high=1, high_open=True,
                                     optional=True)),
            ("max_rungs", _whole(args, "--max-rungs", 2, optional=True))) if value is not None},
    }


def _show(option, value):
    return "none" if value is None else str(value)


def _merge_resume(settings, explicit, checkpoint, *, saved=None, finished=False, layer=None):
    """With --resume: settings left out come from the checkpoint; one given that differs
    from it is refused unless the resume rule lets it change (cyrbm.training.resume:
    --epochs, --k, --lr, --lr-decay, --momentum, --weight-decay, --monitor; the Trainer
    records the change in the history).  ``saved``: the settings of a finished DBN layer
    ``layer`` of the file ``checkpoint`` (read from ``checkpoint`` otherwise);
    ``finished``: nothing of it can change (its epochs neither)."""
    from cyrbm import _io
    from cyrbm.training.resume import CHANGEABLE, resume_conflict
    from cyrbm.training.trainer import parse_k
    done = None
    if saved is None:
        meta = _io.read_meta(checkpoint)
        training = meta.get("training") if meta else None
        saved = training.get("settings") if isinstance(training, dict) else None
        if not isinstance(saved, dict) or not isinstance(meta.get("checkpoint"), dict):
            return settings, None         # Trainer.fit gives the precise error
        done = meta["checkpoint"].get("epoch")
    merged = dict(settings)
    option_of = {key: option for option, key in _TRAIN_SETTINGS.items()}
    for option, key in _TRAIN_SETTINGS.items():
        if key not in saved or (key == "epochs" and not finished):
            continue
        was = saved[key]
        if option in explicit:
            now = settings[key]
            same = now == was
            if key == "k":
                try:
                    same = parse_k(now) == parse_k(was)
                except (ValueError, TypeError):
                    same = False
            if same or (key == "monitor_size" and finished):
                continue
            if finished:
                raise UsageError(
                    f"{option} {_show(option, now)} conflicts with the checkpoint "
                    f"'{checkpoint}' (layer {layer}), made with {option} "
                    f"{_show(option, was)}; leave {option} out to continue as it was, or "
                    f"train afresh without --resume.")
            if key not in CHANGEABLE:
                raise UsageError(resume_conflict(
                    {key: was}, {key: now}, checkpoint, name_of=option_of,
                    words=lambda name, value: f"{name} {_show(name, value)}"))
        else:
            merged[key] = was
    if "--epochs" not in explicit and isinstance(saved.get("epochs"), int):
        merged["epochs"] = saved["epochs"]
    if isinstance(done, int) and not isinstance(done, bool) and merged["epochs"] < done:
        raise UsageError(f"--epochs {merged['epochs']} is fewer than the {done} epochs the "
                         f"checkpoint '{checkpoint}' has done.")
    return merged, done


def _check_outputs(args, model_path, checkpoint, resume):
    """No user file is replaced unless it is the output named for that purpose."""
    from cyrbm import _io
    _io.check_outputs(
        [("-o", model_path, "npz"),
         ("--checkpoint" if args["--checkpoint"] else "the checkpoint named after -o",
          checkpoint, "npz"), ("--plot", args.get("--plot"), "png")],
        [("the training data DATA", _data_file(args["DATA"])),
         ("the test data --data", _data_file(args.get("--data")))])
    if not resume and os.path.isfile(checkpoint):
        meta = _io.read_meta(checkpoint)
        if meta is None or "checkpoint" not in meta:
            raise UsageError(f"'{checkpoint}' exists and is not a cyrbm checkpoint; name "
                             f"another file with --checkpoint, or move it away.")


def epoch_line(record, epoch=None):
    """The progress line of one training epoch (a Trainer history record), as train and
    dbn print it; ``epoch`` replaces the leading "epoch N" (dbn's "layer 1/2, epoch 3/10")."""
    parts = [epoch or f"epoch {record['epoch']}", f"k={record['k']}",
             f"{record['seconds']:.2f} s"]
    if "swap_rates" in record:
        parts.append("swap rates " + " ".join(f"{r:.2f}" for r in record["swap_rates"]))
    if record.get("hop_acceptance") is not None:
        parts.append(f"hop acceptance {record['hop_acceptance']:.3f} "
                     f"({record['hops_proposed']} hops, {record['modes']} modes)")
    if "reconstruction_error" in record:
        parts.append(f"reconstruction error {record['reconstruction_error']:.4f}")
    if "pseudo_log_likelihood" in record:
        parts.append(f"pseudo-log-likelihood {record['pseudo_log_likelihood']:.4f}")
    if record.get("changed"):
        from cyrbm.training.resume import describe_change
        parts.extend(describe_change(change) for change in record["changed"])
    if "log_Z" in record:
        parts.append(f"ln Z {record['log_Z']:.3f} +- {3 * record['log_Z_se']:.3f}")
        if "log_likelihood" in record:
            lo, hi = record["log_likelihood_interval"]
            parts.append(f"test log-likelihood {record['log_likelihood']:.3f} "
                         f"[{lo:.3f}, {hi:.3f}]")
    return "  ".join(parts)


def _gaussian_options(args, gaussian, resume):
    """(sigma, whitening kind or None) of --sigma, --learn-sigma and --whiten, which are
    options of --visible gaussian (--sigma: of a new model, not of a resumed one)."""
    for option in ("--sigma", "--learn-sigma", "--whiten"):
        if args.get(option) not in (None, False) and not gaussian:
            raise UsageError(f"{option} is an option of Gaussian visible units; add "
                             f"--visible gaussian.")
    if args.get("--sigma") is not None and resume:
        raise UsageError("--sigma sets a new model's sigma; a resumed run keeps the "
                         "checkpoint's, so leave --sigma out with --resume.")
    whiten = args.get("--whiten")
    from cyrbm.data.patches import WHITENINGS
    if whiten is not None and whiten not in WHITENINGS:
        raise UsageError(f"--whiten must be one of {', '.join(WHITENINGS)}, not {whiten!r}.")
    sigma = _real(args, "--sigma", low=0, low_open=True, optional=True)
    return (1.0 if sigma is None else sigma), whiten


def _lateral_options(args, settings, checkpoint, resume, gaussian, track):
    """The Trainer's SRBM settings of --lateral and --reconstruction ({} without them):
    an SRBM has binary visible units and trains by CD, PCD or AMH (with Gibbs
    reconstructions), PT or PTT (whose ladders are swept by sequential Gibbs: --reconstruction gibbs is
    implied, mean-field refused).  On --resume of an SRBM's checkpoint both default to
    the checkpoint's."""
    lateral, reconstruction = args.get("--lateral"), args.get("--reconstruction")
    if resume:
        from cyrbm import _io
        meta = _io.read_meta(checkpoint) if os.path.isfile(checkpoint) else None
        if isinstance(meta, dict) and meta.get("visible") == "lateral":
            lateral = True
            saved = ((meta.get("training") or {}).get("settings") or {}).get("lateral")
            if reconstruction is None and isinstance(saved, dict):
                reconstruction = saved.get("reconstruction")
    if not lateral:
        if reconstruction is not None:
            raise UsageError("--reconstruction is an option of an SRBM; add --lateral.")
        return {}
    if gaussian:
        raise UsageError("--lateral trains an SRBM of binary visible units, so --visible "
                         "gaussian does not apply.")
    from cyrbm.models.srbm import RECONSTRUCTIONS
    method = settings["method"]
    tempered = method in ("pt", "ptt")
    if tempered and reconstruction not in (None, "gibbs"):
        raise UsageError(f"--method {method} sweeps its ladders by sequential Gibbs, so "
                         f"--reconstruction {reconstruction} does not apply to it.")
    reconstruction = reconstruction or ("gibbs" if tempered else RECONSTRUCTIONS[0])
    if reconstruction not in RECONSTRUCTIONS:
        raise UsageError(f"--reconstruction must be mean-field or gibbs, not "
                         f"{reconstruction!r}.")
    if method not in ("cd", "pcd", "amh", "pt", "ptt") or (method in ("pcd", "amh")
                                                          and reconstruction != "gibbs"):
        raise UsageError(f"--lateral trains with --method cd, pcd or amh with "
                         f"--reconstruction gibbs, pt or ptt, not --method {method} with "
                         f"{reconstruction}.")
    return {"lateral": True, "reconstruction": reconstruction}


def cmd_train(args, out):
    from cyrbm.data.datasets import load_data
    from cyrbm.training.trainer import Trainer

    binarize = args["--binarize"]
    if binarize not in (None, "threshold", "stochastic"):
        raise UsageError(f"--binarize must be threshold or stochastic, not {binarize!r}.")
    threshold = binarize_threshold(args)
    settings = _train_settings(args)
    checkpoint_every = _whole(args, "--checkpoint-every", 1, optional=True)
    checkpoint_seconds = _real(args, "--checkpoint-seconds", low=0)
    threads = parse_threads(args["--threads"])
    model_path = args["--output"]
    checkpoint = args["--checkpoint"] or default_checkpoint(model_path)
    resume = args["--resume"]
    _check_outputs(args, model_path, checkpoint, resume)
    if resume:
        settings, done = _merge_resume(settings, args["__explicit__"], checkpoint)
        if done is not None and done == settings["epochs"] and os.path.isfile(model_path):
            # (without the model file, a resume writes it: the run was stopped after its
            # last checkpoint)
            raise UsageError(f"the checkpoint '{checkpoint}' has done all {done} epochs of "
                             f"its run and '{model_path}' is written, so there is nothing to "
                             f"resume; give --epochs above {done} to train on.")
    quiet = args["--json"]
    lines = not (quiet or args["--no-progress"])

    track = args["--track-logz"] and args["--tracker"]
    if "--tracker" in args["__explicit__"] and not track:
        raise UsageError("--tracker is an option of train --track-logz; add --track-logz "
                         "to track ln Z through training.")
    if track not in (False, "ladder") and (track != "filter" or settings["method"] != "pt"):
        raise UsageError(f"--tracker is ladder or filter (with --method pt only), not "
                         f"{track} with --method {settings['method']}.")
    track_every = _whole(args, "--track-every", 1, optional=True)
    track_refine = _whole(args, "--track-refine", 0, optional=True)
    track_overlap = _real(args, "--track-overlap", low=0, high=1, low_open=True,
                          high_open=True, optional=True)
    for option in ("--track-every", "--track-refine", "--track-overlap", "--data", "--plot"):
        if args[option] is not None and not track:
            raise UsageError(f"{option} is an option of train --track-logz; add --track-logz "
                             f"to track ln Z through training.")

    def report(record):
        if lines:
            print(epoch_line(record), file=sys.stderr, flush=True)
        if record.get("overlap_warning") and not quiet:
            print(f"cyrbm train: warning: {record['overlap_warning']}", file=sys.stderr)

    gaussian = settings["visible"] == "gaussian"
    if gaussian and binarize is not None:
        raise UsageError("--binarize is for binary visible units, not --visible gaussian.")
    sigma, whiten = _gaussian_options(args, gaussian, resume)
    lateral = _lateral_options(args, settings, checkpoint, resume, gaussian, track)
    data = load_data(args["DATA"], binarize=binarize, threshold=threshold,
                     seed=settings["seed"], real=gaussian)
    whitening = None
    if whiten is not None:
        from cyrbm.data.patches import fit_whitening
        whitening = fit_whitening(data, whiten)
        data = whitening.transform(data)
    test = None if args["--data"] is None else load_data(
        args["--data"], binarize=binarize, threshold=threshold, seed=settings["seed"])
    sampler = {key: settings[key] for key in ("temperatures", "chains", "hop_prob", "modes",
                                              "radius", "hop_weight", "swap_threshold",
                                              "max_rungs")
               if settings.get(key) is not None}
    trainer = Trainer(
        settings["n_hidden"], method=settings["method"], k=settings["k"],
        epochs=settings["epochs"], batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"], lr_decay=settings["lr_decay"],
        momentum=settings["momentum"], weight_decay=settings["weight_decay"],
        seed=settings["seed"], threads=threads, dtype=settings["dtype"],
        checkpoint=checkpoint, checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        monitor_size=settings["monitor_size"], visible=settings["visible"],
        progress=False if (args["--no-progress"] or quiet) else None, callback=report,
        track_logz=track, track_every=track_every,
        **({"track_refine": track_refine} if track_refine is not None else {}),
        track_overlap=track_overlap, **sampler,
        **({"sigma": sigma, "learn_sigma": args["--learn-sigma"]} if gaussian else {}),
        **lateral)
    t0 = time.perf_counter()
    try:
        model = trainer.fit(data, resume=resume, test_data=test)
    except KeyboardInterrupt as exc:
        if trainer.saved_on_interrupt:
            print(f"cyrbm train: {stop_word(exc)}: the state was saved to '{checkpoint}'; "
                  f"continue with --resume.", file=sys.stderr)
        else:
            print(f"cyrbm train: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)
    model.meta["training"]["data"] = args["DATA"]
    if whitening is not None:
        model.whitening = whitening
    model.save(model_path)
    if args["--plot"] is not None:
        from cyrbm._plot import write_learning_curve
        write_learning_curve(args["--plot"], trainer.history)
    last = trainer.history[-1] if trainer.history else {}
    written = checkpoint if os.path.isfile(checkpoint) else None
    result = {
        "model": model_path, "checkpoint": written, "data": args["DATA"],
        "n_samples": int(data.shape[0]), "n_visible": model.n_visible,
        "n_hidden": model.n_hidden, "method": trainer.method, "k": trainer.k,
        "epochs": trainer.epochs, "seconds": time.perf_counter() - t0,
        "threads": trainer.threads,
        "reconstruction_error": last.get("reconstruction_error"),
        "pseudo_log_likelihood": last.get("pseudo_log_likelihood"),
        **({key: last.get(key) for key in ("log_Z", "log_Z_se", "log_likelihood",
                                           "log_likelihood_interval")} if track else {}),
        "history": trainer.history,
    }
    if args["--json"]:
        print(json.dumps(result))
    else:
        ramp = (f" (k from {trainer.k_first} to {trainer.k_last} over epochs 1-"
                f"{trainer.k_span}, then {trainer.k_last})"
                if trainer.k_first != trainer.k_last and trainer.k_span < trainer.epochs else "")
        kind = ("Gaussian RBM" if gaussian else
                f"SRBM ({trainer.reconstruction} reconstructions)" if lateral else "RBM")
        print(f"trained a {model.n_visible} x {model.n_hidden} {kind} by {trainer.method.upper()}-"
              f"{trainer.k}{ramp} on {data.shape[0]} rows of '{args['DATA']}' "
              f"({trainer.epochs} epochs, {result['seconds']:.2f} s)", file=out)
        if last.get("pseudo_log_likelihood") is not None:
            print(f"pseudo-log-likelihood per sample {last['pseudo_log_likelihood']:.4f} nats, "
                  f"reconstruction error {last['reconstruction_error']:.4f}", file=out)
        elif last.get("reconstruction_error") is not None:
            print(f"reconstruction error {last['reconstruction_error']:.4f}", file=out)
        if last.get("log_Z") is not None:
            print(f"tracked ln Z {last['log_Z']:.4f} +- {3 * last['log_Z_se']:.4f} (3 se)"
                  + ("" if last.get("log_likelihood") is None else
                     f", test log-likelihood {last['log_likelihood']:.4f} nats"), file=out)
        print(f"wrote {model_path}" + (f" (checkpoint {written})" if written else ""), file=out)
    return 0
