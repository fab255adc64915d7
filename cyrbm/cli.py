"""cyrbm - fast, measurable Restricted Boltzmann Machines.

Usage:
  cyrbm train DATA -o MODEL [--hidden N] [--method METHOD] [--k K] [--epochs E]
              [--batch B] [--lr LR] [--lr-decay N0] [--momentum MOM]
              [--weight-decay L2] [--seed S] [--threads T] [--dtype DTYPE]
              [--checkpoint FILE] [--checkpoint-every N] [--resume]
              [--binarize MODE] [--threshold X] [--monitor N] [--no-progress] [--json]
  cyrbm info [MODEL] [--json]
  cyrbm ais MODEL [--data DATA] [--base-data DATA] [--runs R] [--schedule SCHED]
              [--seed S] [--threads T] [--json]
  cyrbm ratio MODEL_A MODEL_B [--data DATA] [--runs R] [--schedule SCHED]
              [--start HOW] [--burn-in N] [--chains C] [--steps-between N] [--seed S]
              [--threads T] [--json]
  cyrbm logz MODEL --exact [--threads T] [--json]
  cyrbm -h | --help
  cyrbm --version

Commands:
  train   Train an RBM on DATA (a .npy/.npz/.csv/IDX file or a bundled name such as
          'digits') and write it to MODEL (.npz).
  info    Without MODEL: version, OpenMP, threads, BLAS, bundled data.  With MODEL:
          its sizes, dtype, format and how it was trained.
  ais     Estimate ln Z of MODEL by annealed importance sampling from a base-rate
          model, and with --data the average test log-probability.
  ratio   Estimate ln(Z_B / Z_A) of two RBMs by AIS.
  logz    Compute ln Z exactly by enumerating the smaller layer.

Options:
  -o MODEL, --output MODEL   Model file to write (.npz).
  --hidden N                 Hidden units [default: 100].
  --method METHOD            cd or pcd (persistent CD / SML) [default: cd].
  --k K                      Gibbs steps per update; FIRST:LAST raises k linearly over
                             the epochs, as in SM08's CD25 (e.g. 1:25) [default: 1].
  --epochs E                 Total epochs [default: 10].
  --batch B                  Mini-batch size [default: 100].
  --lr LR                    Learning rate eta_0 [default: 0.05].
  --lr-decay N0              Search-then-converge: eta_0 / (1 + updates / N0)
                             (default: constant).
  --momentum MOM             Momentum [default: 0.5].
  --weight-decay L2          L2 weight decay on W [default: 0.0002].
  --seed S                   The one seed behind every random choice [default: 0].
  --threads T                OpenMP threads (default: all cores; results do not
                             depend on it).
  --dtype DTYPE              float32 or float64 [default: float32].
  --checkpoint FILE          Checkpoint file (default: MODEL with .ckpt.npz).
  --checkpoint-every N       Epochs between checkpoints [default: 1].
  --resume                   Continue from the checkpoint, up to --epochs in all.
  --binarize MODE            Turn grey data into 0/1: threshold or stochastic.
  --threshold X              Threshold for --binarize threshold, after scaling to
                             [0, 1] [default: 0.5].
  --monitor N                Training rows on which the reconstruction error and
                             pseudo-log-likelihood are recorded each epoch [default: 200].
  --no-progress              No progress bar.
  --data DATA                Data whose average log-probability to estimate.
  --base-data DATA           Data to fit the base-rate model to (default: --data).
  --runs R                   AIS runs [default: 100].
  --schedule SCHED           paper, linear:K, or a text file of betas [default: paper].
  --start HOW                Starting states of ratio runs: exact (draws from MODEL_A
                             by enumerating its smaller layer, up to 30 units), gibbs
                             (chains on MODEL_A), or auto: exact up to 20 units
                             [default: auto].
  --burn-in N                Gibbs sweeps before the first sample from MODEL_A: chains
                             started at data need many on trained models
                             [default: 20000].
  --chains C                 Gibbs chains on MODEL_A giving the runs' starting states;
                             each gives ceil(R / C) states (default: one per run).
  --steps-between N          Gibbs sweeps between the states a chain gives
                             [default: 100].
  --exact                    Enumerate (the only method of logz).
  --json                     Print the result as one JSON object.
  -h, --help                 Show this help.
  --version                  Show the version.

Errors are printed as one sentence on stderr, with a non-zero exit status.
"""
import json
import math
import os
import sys
import time

from docopt import docopt

import cyrbm
from cyrbm.errors import CyrbmError


class UsageError(CyrbmError):
    """A command-line value that does not parse."""


def _number(args, key, kind, *, optional=False):
    value = args[key]
    if value is None:
        if optional:
            return None
        raise UsageError(f"{key} needs a value.")
    try:
        result = kind(value)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise UsageError(f"{key} must be {what}, not {value!r}.") from None
    if kind is float and not math.isfinite(result):
        raise UsageError(f"{key} must be a finite number, not {value!r}.")
    return result


def default_checkpoint(model_path):
    root, ext = os.path.splitext(os.fspath(model_path))
    return root + ".ckpt" + (ext or ".npz")


def cmd_train(args, out):
    from cyrbm.datasets import load_data
    from cyrbm.training import Trainer

    binarize = args["--binarize"]
    if binarize not in (None, "threshold", "stochastic"):
        raise UsageError(f"--binarize must be threshold or stochastic, not {binarize!r}.")
    seed = _number(args, "--seed", int)
    data = load_data(args["DATA"], binarize=binarize, threshold=_number(args, "--threshold", float),
                     seed=seed)
    model_path = args["--output"]
    checkpoint = args["--checkpoint"] or default_checkpoint(model_path)
    if os.path.abspath(checkpoint) == os.path.abspath(model_path):
        raise UsageError("the checkpoint file must differ from the model file.")
    lr_decay = _number(args, "--lr-decay", float, optional=True)
    threads = _number(args, "--threads", int, optional=True)
    quiet = args["--json"]

    def report(record):
        if quiet:
            return
        parts = [f"epoch {record['epoch']}", f"k={record['k']}", f"{record['seconds']:.2f} s"]
        if "reconstruction_error" in record:
            parts.append(f"reconstruction error {record['reconstruction_error']:.4f}")
            parts.append(f"pseudo-log-likelihood {record['pseudo_log_likelihood']:.4f}")
        print("  ".join(parts), file=sys.stderr, flush=True)

    trainer = Trainer(
        _number(args, "--hidden", int), method=args["--method"], k=args["--k"],
        epochs=_number(args, "--epochs", int), batch_size=_number(args, "--batch", int),
        learning_rate=_number(args, "--lr", float), lr_decay=lr_decay,
        momentum=_number(args, "--momentum", float),
        weight_decay=_number(args, "--weight-decay", float), seed=seed, threads=threads,
        dtype=args["--dtype"], checkpoint=checkpoint,
        checkpoint_every=_number(args, "--checkpoint-every", int),
        monitor_size=_number(args, "--monitor", int),
        progress=False if (args["--no-progress"] or quiet) else None, callback=report)
    from cyrbm._io import check_writable
    check_writable(model_path)
    t0 = time.perf_counter()
    try:
        model = trainer.fit(data, resume=args["--resume"])
    except KeyboardInterrupt:
        print(f"interrupted: the state was saved to '{checkpoint}'; continue with --resume.",
              file=sys.stderr)
        return 130
    model.meta["training"]["data"] = args["DATA"]
    model.save(model_path)
    last = trainer.history[-1] if trainer.history else {}
    result = {
        "model": model_path, "checkpoint": checkpoint, "data": args["DATA"],
        "n_samples": int(data.shape[0]), "n_visible": model.n_visible,
        "n_hidden": model.n_hidden, "method": trainer.method, "k": trainer.k,
        "epochs": trainer.epochs, "seconds": time.perf_counter() - t0,
        "reconstruction_error": last.get("reconstruction_error"),
        "pseudo_log_likelihood": last.get("pseudo_log_likelihood"),
        "history": trainer.history,
    }
    if args["--json"]:
        print(json.dumps(result))
    else:
        print(f"trained a {model.n_visible} x {model.n_hidden} RBM by {trainer.method.upper()}-"
              f"{trainer.k} on {data.shape[0]} rows of '{args['DATA']}' "
              f"({trainer.epochs} epochs, {result['seconds']:.2f} s)", file=out)
        if last.get("pseudo_log_likelihood") is not None:
            print(f"pseudo-log-likelihood per sample {last['pseudo_log_likelihood']:.4f} nats, "
                  f"reconstruction error {last['reconstruction_error']:.4f}", file=out)
        print(f"wrote {model_path} (checkpoint {checkpoint})", file=out)
    return 0


def cmd_info(args, out):
    if args["MODEL"] is None:
        info = cyrbm.config()
        from cyrbm.datasets import bundled_datasets
        info["bundled_data"] = bundled_datasets()
        if args["--json"]:
            print(json.dumps(info))
        else:
            cyrbm.show_config()
            print("  bundled data:")
            for name, text in info["bundled_data"].items():
                print(f"    {name}: {text}", file=out)
        return 0
    from cyrbm import _io
    from cyrbm.models import RBM
    path = args["MODEL"]
    arrays = _io.read_npz(path)
    model = RBM.from_arrays(arrays, path)
    meta = _io.meta_from_array(arrays["meta"], path) if "meta" in arrays else {}
    training = model.meta.get("training", {})
    history = training.get("history", [])
    info = {
        "model": path, "n_visible": model.n_visible, "n_hidden": model.n_hidden,
        "dtype": model.dtype.name, "format_version": meta.get("format_version"),
        "written_by": meta.get("cyrbm_version"),
        "is_checkpoint": "checkpoint" in meta,
        "training": {k: v for k, v in training.items() if k != "history"},
        "last_epoch": history[-1] if history else None,
    }
    if args["--json"]:
        print(json.dumps(info))
        return 0
    print(f"{path}: RBM {model.n_visible} visible x {model.n_hidden} hidden, {model.dtype.name}",
          file=out)
    if meta:
        print(f"  format version {meta.get('format_version')}, written by cyrbm "
              f"{meta.get('cyrbm_version')}{' (a training checkpoint)' if info['is_checkpoint'] else ''}",
              file=out)
    else:
        print("  no metadata (weights trained elsewhere)", file=out)
    settings = training.get("settings")
    if settings:
        k = settings.get("k")
        print(f"  trained by {settings.get('method', '?').upper()}-{k}, {training.get('epochs_done')} "
              f"epochs, batch {settings.get('batch_size')}, lr {settings.get('learning_rate')}, "
              f"seed {settings.get('seed')}" + (f", data '{training['data']}'" if training.get("data") else ""),
              file=out)
    if history:
        last = history[-1]
        if "pseudo_log_likelihood" in last:
            print(f"  last epoch: pseudo-log-likelihood {last['pseudo_log_likelihood']:.4f} nats, "
                  f"reconstruction error {last['reconstruction_error']:.4f}", file=out)
    return 0


def _interval(pair):
    lo, hi = pair
    return f"[{lo:.4f}, {hi:.4f}]"


def print_measure(name, r, out):
    """The result of ais / ratio / logz as readable lines."""
    if name == "logz":
        print(f"ln Z = {r['log_Z']:.6f}  (exact, {r['terms']} terms over the "
              f"{r['enumerated_layer']} layer, {r['seconds']:.2f} s)", file=out)
        return
    if name == "ais":
        print(f"ln Z = {r['log_Z']:.4f}  ln(Z +- sigma) {_interval(r['log_Z_sigma_interval'])}  "
              f"ln(Z +- 3 sigma) {_interval(r['log_Z_3sigma_interval'])}", file=out)
        print(f"  AIS from a base-rate model ({r['base_rate']}): {r['runs']} runs, "
              f"{r['betas']} betas ({r['schedule']}), effective sample size {r['ess']:.1f}, "
              f"{r['seconds']:.2f} s", file=out)
        if r.get("avg_log_prob") is not None:
            print(f"average test log-probability of {r['n_data']} rows of '{r['data']}': "
                  f"{r['avg_log_prob']:.4f} nats, 3 sigma interval "
                  f"{_interval(r['avg_log_prob_3sigma_interval'])}", file=out)
        return
    print(f"ln(Z_B / Z_A) = {r['log_ratio']:.4f}  +- sigma {_interval(r['log_ratio_sigma_interval'])}  "
          f"+- 3 sigma {_interval(r['log_ratio_3sigma_interval'])}", file=out)
    print(f"  {r['runs']} runs, {r['betas']} betas ({r['schedule']}), effective sample size "
          f"{r['ess']:.1f}, {r['seconds']:.2f} s", file=out)


def _measure(name):
    def run(args, out):
        try:
            from cyrbm import _cli_measure
        except ImportError:
            raise CyrbmError(f"'cyrbm {name}' is not available in this build.") from None
        result = getattr(_cli_measure, f"run_{name}")(args)
        if args["--json"]:
            print(json.dumps(result))
        else:
            print_measure(name, result, out)
        return 0
    return run


COMMANDS = {"train": cmd_train, "info": cmd_info, "ais": _measure("ais"),
            "ratio": _measure("ratio"), "logz": _measure("logz")}


def main(argv=None):
    args = docopt(__doc__, argv=argv, version=f"cyrbm {cyrbm.__version__}")
    command = next(name for name in COMMANDS if args.get(name))
    try:
        return COMMANDS[command](args, sys.stdout)
    except BrokenPipeError:          # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except (CyrbmError, ValueError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"cyrbm {command}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"cyrbm {command}: interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
