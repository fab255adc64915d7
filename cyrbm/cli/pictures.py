"""``cyrbm sample`` and ``cyrbm filters``: grids of samples and of filters as PNG."""
from cyrbm.cli.options import UsageError, _whole, parse_threads


# ------------------------------------------------------------------ sample, filters
_SAMPLERS = ("gibbs", "pt", "ptt")


def cmd_sample(args, out):
    from cyrbm import _io, images
    from cyrbm.models.rbm import RBM
    n = _whole(args, "--n", 1)
    steps = _whole(args, "--steps", 0)
    seed = _whole(args, "--seed", 0)
    threads = parse_threads(args["--threads"])
    sampler = str(args["--sampler"]).strip().lower()
    if sampler not in _SAMPLERS:
        raise UsageError(f"--sampler must be {', '.join(_SAMPLERS[:-1])} or {_SAMPLERS[-1]}, "
                         f"not {args['--sampler']!r}.")
    files = [f for f in (args["--ladder"] or "").split(",") if f.strip()]
    if (sampler == "ptt") != bool(files):
        raise UsageError("--sampler ptt samples along earlier models of MODEL: give them with "
                         "--ladder FILES (and --ladder only with --sampler ptt).")
    _io.check_outputs([("-o", args["--output"], "png")],
                      [("the model file MODEL", args["MODEL"])]
                      + [("a --ladder model", f.strip()) for f in files])
    model = RBM.load(args["MODEL"])
    ladder = [RBM.load(f.strip()) for f in files] or None
    shape = images.image_shape(model.n_visible, args["--shape"])
    samples = model.sample(n, steps, seed=seed, threads=threads, sampler=sampler,
                           ladder=ladder)
    width, height = images.save_samples(args["--output"], samples, shape)
    print(f"wrote {args['--output']}: {n} samples of {shape[0]}x{shape[1]} pixels after "
          f"{steps} {sampler} sweeps (seed {seed}), a {width}x{height} image", file=out)
    return 0


def cmd_filters(args, out):
    from cyrbm import _io, images
    from cyrbm.models.rbm import RBM
    n = _whole(args, "--n", 1)
    _io.check_outputs([("-o", args["--output"], "png")], [("the model file MODEL", args["MODEL"])])
    model = RBM.load(args["MODEL"])
    shape = images.image_shape(model.n_visible, args["--shape"])
    n = min(n, model.n_hidden)
    width, height = images.save_filters(args["--output"], model.W[:, :n], shape)
    print(f"wrote {args['--output']}: the weights of {n} of {model.n_hidden} hidden units "
          f"as {shape[0]}x{shape[1]} images, a {width}x{height} image", file=out)
    return 0
