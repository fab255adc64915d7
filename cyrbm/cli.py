"""cyrbm - fast, measurable Restricted Boltzmann Machines.

Usage:
  cyrbm train DATA -o MODEL [--hidden N] [--method METHOD] [--k K] [--epochs E]
              [--batch B] [--lr LR] [--lr-decay N0] [--momentum MOM]
              [--weight-decay L2] [--seed S] [--threads T] [--dtype DTYPE]
              [--checkpoint FILE] [--checkpoint-every N] [--checkpoint-seconds S]
              [--resume] [--binarize MODE] [--threshold X] [--monitor N]
              [--no-progress] [--json]
              [--temperatures T] [--chains C] [--hop-prob P] [--modes K] [--radius R]
              [--hop-weight W]
  cyrbm info [MODEL] [--json]
  cyrbm ais MODEL [--data DATA] [--base-data DATA] [--runs R] [--schedule SCHED]
              [--seed S] [--threads T] [--json]
  cyrbm ratio MODEL_A MODEL_B [--data DATA] [--runs R] [--schedule SCHED]
              [--start HOW] [--burn-in N] [--chains C] [--steps-between N] [--seed S]
              [--threads T] [--json]
  cyrbm logz MODEL [--exact] [--threads T] [--json]
  cyrbm dbn DATA -o DBN --layers SIZES [--method METHOD] [--k K] [--epochs E]
              [--batch B] [--lr LR] [--lr-decay N0] [--momentum MOM]
              [--weight-decay L2] [--seed S] [--threads T] [--dtype DTYPE]
              [--checkpoint FILE] [--resume] [--init-transpose] [--binarize MODE]
              [--threshold X] [--monitor N] [--no-progress] [--json]
              [--layer-input INPUT]
  cyrbm bound DBN --data DATA [--method METHOD] [--samples M] [--entropy E]
              [--steps S] [--repeats R] [--trace] [--plot FILE] [--logz VALUE]
              [--runs R] [--schedule SCHED] [--seed S] [--threads T] [--json]
  cyrbm sample MODEL -o IMAGE [--n N] [--steps S] [--sampler SAMPLER] [--shape HxW]
              [--seed S] [--threads T]
  cyrbm filters MODEL -o IMAGE [--n N] [--shape HxW]
  cyrbm evaluate MODEL --data DATA [--base-data DATA] [--runs R] [--chains C]
              [--schedule SCHED] [--save-schedule FILE] [--simulate N] [--plot FILE]
              [--seed S] [--threads T] [--json] [--base-model A] [--base-logz VALUE]
              [--start HOW] [--burn-in N]
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
  dbn     Train a DBN greedily, layer by layer (SM08 Sec. 4.1), on DATA and write it
          to DBN (.npz); training options take one value or one per layer (500,2000).
  bound   Bound ln p(v) of DATA under a DBN: the variational lower bound (SM08 Eq.
          19-24; ln Z of the top RBM by AIS, or --logz), the Chib-style estimate
          (--method chib, MS09), per-vector AIS over h1 (--method ais, MS09's gold
          standard) or the harmonic-mean estimate (--method harmonic, a cautionary
          baseline that over-estimates).
  sample  Draw samples from MODEL and write them to IMAGE (.png) as a grid of images
          (needs Pillow: pip install "cyrbm[images]").
  filters Draw each hidden unit's weights as an image, in a grid written to IMAGE.
  evaluate  The mean test log-probability of DATA from forward AIS (optimistic) and
          from reverse annealing, RAISE (conservative), side by side.

Options:
  -o FILE, --output FILE     File to write: the model (.npz) of train, the image
                             (.png) of sample and filters.
  --hidden N                 Hidden units [default: 100].
  --method METHOD            cd, pcd (persistent CD / SML), pt (parallel tempering,
                             Cho et al. 2010) or amh (mode-hopping SML, Hu & Yu)
                             [default: cd].
  --temperatures T           pt: the ladder, N temperatures evenly spaced from 0 to 1,
                             a list such as 0,0.5,1 (rising, ending at 1), or
                             adaptive:N (spacing re-tuned for equal swap rates)
                             (default: 0, 0.05, ..., 1).
  --hop-prob P               amh: probability of a mode-hopping proposal per chain
                             and update, in [0, 1] (default: 0.1).
  --modes K                  amh: capacity of the mode set, at least 1 (default: 10).
  --radius R                 amh: least Hamming distance between modes (default: a
                             tenth of the visible units).
  --hop-weight W             amh: weights of the hops between modes: uniform, prob or
                             distance (default: uniform).
  --k K                      Gibbs steps per update; FIRST:LAST raises k linearly over
                             the epochs, as in SM08's CD25 (e.g. 1:25; FIRST <= LAST;
                             a resumed run keeps LAST after the first run's epochs)
                             [default: 1].
  --epochs E                 Total epochs [default: 10].
  --batch B                  Mini-batch size [default: 100].
  --lr LR                    Learning rate eta_0 [default: 0.05].
  --lr-decay N0              Search-then-converge: eta_0 / (1 + updates / N0)
                             (default: constant).
  --momentum MOM             Momentum [default: 0.5].
  --weight-decay L2          L2 weight decay on W [default: 0.0002].
  --seed S                   The one seed behind every random choice [default: 0].
  --threads T                OpenMP threads; 0 or absent: chosen by the size of
                             the work, at most one per core (results do not
                             depend on it).
  --dtype DTYPE              float32 or float64 [default: float32].
  --checkpoint FILE          Checkpoint file (default: MODEL with .ckpt.npz).
  --checkpoint-seconds S     Least seconds between checkpoints (0: after every
                             epoch); one is always written at the end and on
                             Ctrl-C [default: 5].
  --checkpoint-every N       Most epochs between checkpoints, however short the
                             time (default: by time only).
  --resume                   Continue from the checkpoint, up to --epochs in all;
                             settings left out are the checkpoint's, and one given
                             that differs is refused.  dbn: a finished DBN only
                             takes more layers (--layers).
  --binarize MODE            Turn grey data into 0/1: threshold or stochastic.
  --threshold X              Threshold for --binarize threshold, after scaling to
                             [0, 1], strictly between 0 and 1 [default: 0.5].
  --monitor N                Training rows on which the reconstruction error and
                             pseudo-log-likelihood are recorded each epoch; auto:
                             200, fewer for large models (8 for 784 x 500) so that
                             monitoring stays a small part of an epoch [default: auto].
  --no-progress              No progress bar and no line per epoch.
  --data DATA                Data whose average log-probability to estimate.
  --base-data DATA           Data to fit the base-rate model to (default: --data).
  --runs R                   AIS runs [default: 100].
  --schedule SCHED           paper, linear:K, or a text file of betas; evaluate also
                             takes adaptive:K (K betas tuned by a pilot run)
                             [default: paper].
  --start HOW                Starting states of ratio runs: exact (draws from MODEL_A
                             by enumerating its smaller layer, up to 30 units), gibbs
                             (chains on MODEL_A), or auto: exact up to 20 units
                             (default: auto; evaluate: with --base-model only).
  --burn-in N                Gibbs sweeps before the first sample from MODEL_A: chains
                             started at data need many on trained models
                             (default: 20000; evaluate: with --base-model only).
  --chains C                 Gibbs chains on MODEL_A giving the runs' starting states;
                             each gives ceil(R / C) states (default: one per run).
                             evaluate: reverse (RAISE) chains per test row (default: 10).
  --steps-between N          Gibbs sweeps between the states a chain gives
                             [default: 100].
  --exact                    Enumerate (the only method of logz).
  --layers SIZES             Hidden-layer sizes of a DBN, bottom first (500,2000).
  --init-transpose           Start each DBN layer above the first as the transpose
                             of the one below (W2 = W1^T).
  --layer-input INPUT        What each DBN layer above the first is trained on:
                             samples of Q(h | below) or their probabilities (probs)
                             [default: samples].
  --samples M                Samples of Q per vector (bound; default: 1 for
                             variational, 100 for harmonic).
  --entropy E                analytic (SM08 Eq. 23) or sampled (-ln Q) [default:
                             analytic].
  --logz VALUE               ln Z of the top RBM, instead of estimating it by AIS.
  --n N                      Samples to draw, or hidden units to draw (the first N)
                             [default: 100].
  --steps S                  sample: Gibbs sweeps of each sample's chain, from
                             uniform random bits [default: 1000].  bound: Markov
                             chain steps S of chib (default 40), betas of ais's
                             linear schedule (default 1000).
  --repeats R                bound: independent chib estimates per vector, averaged
                             in p (default 1); ais runs per vector (default 16).
  --trace                    bound --method chib: the estimate at S = 1, 2, 5, 10,
                             20, 40 (up to --steps) as a table (MS09 Figure 2), and
                             as a figure with --plot FILE.
  --sampler SAMPLER          gibbs (block Gibbs, one chain per sample) or pt (parallel
                             tempering: the T = 1 chain of a ladder of 21 temperatures
                             0, 0.05, ..., 1 per sample) [default: gibbs].
  --shape HxW                Height x width of one image, e.g. 28x28 (default: square).
  --save-schedule FILE       Write the schedule's betas to FILE (one per line) for
                             reuse with --schedule FILE.
  --simulate N               Also the bidirectional check on N states drawn from MODEL
                             (exactly when its smaller layer has <= 20 units).
  --base-model A             evaluate: anneal from the RBM A (the path of 'cyrbm ratio
                             A MODEL', with its --start and --burn-in) instead of a
                             base-rate model, so the gap measures that path's error.
  --base-logz VALUE          evaluate: ln Z of --base-model (default: exact up to 20
                             units in its smaller layer, else AIS from the base rate).
  --plot FILE                Write a PNG (needs matplotlib): evaluate: ln Z-hat
                             against runs, the log weights, the AIS/RAISE gap against
                             K; bound --trace: the estimates against S.
  --json                     Print the result as one JSON object.
  -h, --help                 Show this help.
  --version                  Show the version.

Errors are printed as one sentence on stderr, with a non-zero exit status.
"""
import json
import math
import os
import re
import sys
import time

import cyrbm
from cyrbm.errors import CyrbmError, Terminated, stop_status, stop_word

# NumPy, SciPy, the kernels and docopt are imported when a command needs them, inside
# main(): the command starts fast, and Ctrl-C while they load is answered like any other.


class UsageError(CyrbmError):
    """A command-line value that does not parse."""


# --------------------------------------------------------------------- usage errors
_VALUE_OPTIONS = {
    "--output", "--hidden", "--method", "--k", "--epochs", "--batch", "--lr", "--lr-decay",
    "--momentum", "--weight-decay", "--seed", "--threads", "--dtype", "--checkpoint",
    "--checkpoint-every", "--checkpoint-seconds", "--binarize", "--threshold", "--monitor",
    "--data", "--base-data",
    "--runs", "--schedule", "--start", "--burn-in", "--chains", "--steps-between",
    "--temperatures", "--hop-prob", "--modes", "--radius", "--hop-weight",
    "--layers", "--samples", "--entropy", "--logz",
    "--n", "--steps", "--sampler", "--shape", "--save-schedule", "--simulate", "--plot",
    "--repeats", "--base-model", "--base-logz", "--layer-input",
}
_FLAG_OPTIONS = {"--resume", "--no-progress", "--json", "--exact", "--help", "--version",
                 "--init-transpose", "--trace"}
_POSITIONALS = {"train": ["DATA"], "info": [], "ais": ["MODEL"], "ratio": ["MODEL_A", "MODEL_B"],
                "logz": ["MODEL"], "dbn": ["DATA"], "bound": ["DBN"],
                "sample": ["MODEL"], "filters": ["MODEL"],
                "evaluate": ["MODEL"]}
_OPTIONAL_POSITIONALS = {"info": ["MODEL"]}
_WHAT = {"DATA": "DATA (the training data)", "MODEL": "MODEL (a model file)",
         "MODEL_A": "MODEL_A and MODEL_B (two model files)",
         "MODEL_B": "MODEL_B (the second model file)", "DBN": "DBN (a DBN file)"}


def _usage_lines():
    """{command: its usage line as one line} from the docstring."""
    block = __doc__.split("Usage:", 1)[1].split("\n\n", 1)[0]
    lines, current = {}, None
    for raw in block.splitlines():
        text = raw.strip()
        if text.startswith("cyrbm "):
            current = text.split()[1]
            lines[current] = text
        elif text and current:
            lines[current] += " " + text
    return lines


def _short_usage(command):
    line = _usage_lines().get(command)
    if line is None:
        return "usage: cyrbm (train|info|ais|ratio|logz|sample|filters|evaluate|dbn|bound) ...; 'cyrbm --help' lists the options."
    required = " ".join(re.sub(r"\[[^\]]*\]", " ", line).split())
    return f"usage: {required} [options]; 'cyrbm --help' lists them."


def _usage_problem(argv):
    """(command or None, one sentence) saying why ``argv`` does not fit the usage."""
    if not argv:
        return None, "no command given (commands: train, info, ais, ratio, logz, sample, filters, evaluate, dbn, bound)."
    command = argv[0]
    if command not in _POSITIONALS:
        if command.startswith("-"):
            return None, f"unknown option {command!r} before the command."
        import difflib          # only for a usage error (6 ms at start-up otherwise)
        close = difflib.get_close_matches(command, list(_POSITIONALS), n=1)
        also = f" (did you mean '{close[0]}'?)" if close else " (commands: train, info, ais, ratio, logz, sample, filters, evaluate, dbn, bound)"
        return None, f"unknown command {command!r}{also}."
    usage = _usage_lines()[command]
    allowed = set(re.findall(r"--[\w-]+", usage)) | {"--help", "--version"}
    if " -o " in usage:
        allowed.add("--output")
    known = _VALUE_OPTIONS | _FLAG_OPTIONS
    positionals, given = [], set()
    i = 1
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positionals.extend(argv[i:])
            break
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            if name not in known:
                matches = [o for o in known if o.startswith(name)]
                if len(matches) == 1:
                    name = matches[0]
                elif matches:
                    return command, f"option {name} is ambiguous ({', '.join(sorted(matches))})."
                else:
                    import difflib
                    close = difflib.get_close_matches(name, sorted(allowed), n=1)
                    also = f" (did you mean {close[0]}?)" if close else ""
                    return command, f"unknown option {name}{also}."
            if name not in allowed:
                return command, f"option {name} does not apply to 'cyrbm {command}'."
            if name in _VALUE_OPTIONS and not eq:
                if i >= len(argv):
                    return command, f"option {name} needs a value."
                i += 1
            if name in _FLAG_OPTIONS and eq:
                return command, f"option {name} takes no value."
            if name in given:
                return command, _repeated(name)
            given.add(name)
        elif arg.startswith("-") and arg != "-":
            if arg.startswith("-o"):
                if "--output" not in allowed:
                    return command, f"option -o does not apply to 'cyrbm {command}'."
                if arg == "-o":
                    if i >= len(argv):
                        return command, "option -o needs a value (the model file to write)."
                    i += 1
                if "--output" in given:
                    return command, _repeated("--output")
                given.add("--output")
            elif arg == "-h":
                given.add("--help")
            else:
                return command, f"unknown option {arg}."
        else:
            positionals.append(arg)
    needed = _POSITIONALS[command]
    optional = _OPTIONAL_POSITIONALS.get(command, [])
    if len(positionals) < len(needed):
        missing = needed[len(positionals)]
        return command, f"'cyrbm {command}' needs {_WHAT[missing]}."
    if len(positionals) > len(needed) + len(optional):
        extra = positionals[len(needed) + len(optional)]
        return command, f"unexpected argument {extra!r}."
    if command == "train" and "--output" not in given:
        return command, "'cyrbm train' needs -o MODEL, the model file to write."
    if command == "dbn" and "--output" not in given:
        return command, "'cyrbm dbn' needs -o DBN, the DBN file to write."
    if command == "dbn" and "--layers" not in given:
        return command, "'cyrbm dbn' needs --layers, the hidden-layer sizes (such as 500,2000)."
    if command == "bound" and "--data" not in given:
        return command, "'cyrbm bound' needs --data DATA, the vectors to bound."
    if command in ("sample", "filters") and "--output" not in given:
        return command, f"'cyrbm {command}' needs -o IMAGE, the image file (.png) to write."
    if command == "evaluate" and "--data" not in given:
        return command, "'cyrbm evaluate' needs --data DATA, the test rows."
    return command, "the arguments do not fit its usage."


def _repeated(name):
    """A usage error's sentence: option ``name`` was given twice (docopt just fails)."""
    value = name not in _FLAG_OPTIONS
    if name == "--output":
        name = "-o/--output"
    return (f"option {name} was given more than once (give it once"
            + (", with the value wanted)." if value else ")."))


def _parse(argv):
    """docopt's arguments, or a UsageError-free (code, message) for a usage error."""
    from docopt import DocoptExit, docopt
    from cyrbm import _cliparse
    fast = _cliparse.parse(__doc__, argv, COMMANDS)      # one command's usage: faster
    if fast is not None:
        args, explicit = fast
        args["__explicit__"] = explicit
        return args, None
    try:
        return docopt(__doc__, argv=argv, version=f"cyrbm {cyrbm.__version__}"), None
    except DocoptExit:
        command, sentence = _usage_problem(argv)
        prefix = f"cyrbm {command}" if command else "cyrbm"
        return None, f"{prefix}: error: {sentence}\n{_short_usage(command)}"


def _explicit_options(argv):
    """The options given on the command line (not filled in from defaults)."""
    from docopt import docopt
    bare = re.sub(r"\s*\[default: [^\]]*\]", "", __doc__)
    args = docopt(bare, argv=argv, version=f"cyrbm {cyrbm.__version__}")
    return {key for key, value in args.items()
            if key.startswith("-") and value not in (None, False)}


# ------------------------------------------------------------------------ values
def _whole(args, key, minimum=None, *, optional=False, what=""):
    """An option's value as a whole number (``1e6`` spelled so is accepted)."""
    value = args[key]
    if value is None:
        if optional:
            return None
        raise UsageError(f"{key} needs a value.")
    text = str(value).strip()
    try:
        result = int(text, 10)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise UsageError(f"{key} must be a whole number, not {value!r}.") from None
        result = int(as_float)
    if minimum is not None and result < minimum:
        raise UsageError(f"{key} must be at least {minimum}{what}, not {result}.")
    return result


def _real(args, key, *, low=None, high=None, low_open=False, high_open=False, optional=False):
    """An option's value as a finite number within the given bounds."""
    value = args[key]
    if value is None:
        if optional:
            return None
        raise UsageError(f"{key} needs a value.")
    try:
        result = float(value)
    except ValueError:
        raise UsageError(f"{key} must be a number, not {value!r}.") from None
    if not math.isfinite(result):
        raise UsageError(f"{key} must be a finite number, not {value!r}.")
    bad_low = low is not None and (result <= low if low_open else result < low)
    bad_high = high is not None and (result >= high if high_open else result > high)
    if bad_low or bad_high:
        parts = []
        if low is not None:
            parts.append(f"{'above' if low_open else 'at least'} {low:g}")
        if high is not None:
            parts.append(f"{'below' if high_open else 'at most'} {high:g}")
        raise UsageError(f"{key} must be {' and '.join(parts)}, not {value}.")
    return result


def binarize_threshold(args):
    """--threshold when given (load_data refuses it without --binarize threshold), else
    None: its [default: 0.5] is load_data's."""
    return _real(args, "--threshold") if "--threshold" in args["__explicit__"] else None


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_threads(raw):
    """--threads: None or 0 for automatic (by the size of the work), else a number of
    threads, capped at the cores this process may use (with a note on stderr)."""
    if raw is None:
        return None
    value = _whole({"--threads": raw}, "--threads", 0, what=" (0: chosen by the size of the work)")
    if value == 0:
        return None
    cores = _cores()
    if value > cores:
        print(f"cyrbm: note: --threads {value} is more than the {cores} cores here; "
              f"using {cores}.", file=sys.stderr)
        return cores
    return value


def default_checkpoint(model_path):
    root, ext = os.path.splitext(os.fspath(model_path))
    return root + ".ckpt" + (ext or ".npz")


def _data_file(source):
    """The file behind a DATA argument, or None for a bundled data set."""
    from cyrbm.datasets import bundled_datasets
    if source is None or source in bundled_datasets():
        return None
    if os.path.exists(source):
        return source
    prefix, colon, _ = source.rpartition(":")
    if colon and os.path.isfile(prefix):
        return prefix
    return None


# -------------------------------------------------------------------------- train
# option -> (Trainer setting, how to read it from the command line)
_TRAIN_SETTINGS = {
    "--hidden": "n_hidden", "--method": "method", "--k": "k", "--epochs": "epochs",
    "--batch": "batch_size", "--lr": "learning_rate", "--lr-decay": "lr_decay",
    "--momentum": "momentum", "--weight-decay": "weight_decay", "--seed": "seed",
    "--dtype": "dtype", "--monitor": "monitor_size",
    "--temperatures": "temperatures", "--chains": "chains", "--hop-prob": "hop_prob",
    "--modes": "modes", "--radius": "radius", "--hop-weight": "hop_weight",
}
#: the options of one training method only
_METHOD_OPTIONS = {"--temperatures": "pt", "--chains": "pt", "--hop-prob": "amh",
                   "--modes": "amh", "--radius": "amh", "--hop-weight": "amh"}


def _train_settings(args):
    """The Trainer settings from the options, each checked and named by its option."""
    from cyrbm.training import METHODS, parse_k
    method = args["--method"]
    if method not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}, not {method!r}.")
    for option, only in _METHOD_OPTIONS.items():
        if args.get(option) is not None and method != only and not args.get("--resume"):
            raise UsageError(f"{option} is an option of --method {only}, not of {method}.")
    temperatures = args.get("--temperatures")
    if temperatures is not None:
        from cyrbm.tempering import parse_temperatures
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
        "dtype": dtype,
        "monitor_size": ("auto" if args["--monitor"] == "auto"
                         else _whole(args, "--monitor", 0, what=" (or auto)")),
        # the options of PT and AMH, only when given (Trainer's defaults otherwise)
        **{key: value for key, value in (
            ("temperatures", temperatures),
            ("chains", _whole(args, "--chains", 1, optional=True) if method == "pt" else None),
            ("hop_prob", _real(args, "--hop-prob", low=0, high=1, optional=True)),
            ("modes", _whole(args, "--modes", 1, optional=True)),
            ("radius", _whole(args, "--radius", 0, optional=True)),
            ("hop_weight", hop_weight)) if value is not None},
    }


def _show(option, value):
    return "none" if value is None else str(value)


def _merge_resume(settings, explicit, checkpoint, *, saved=None, finished=False, layer=None):
    """With --resume: settings left out come from the checkpoint; one given that differs
    from it is refused (it would continue silently as the checkpoint's).  ``saved``: the
    settings of a finished DBN layer ``layer`` of the file ``checkpoint`` (read from
    ``checkpoint`` otherwise); ``finished``: its epochs cannot change either."""
    from cyrbm import _io
    from cyrbm.training import parse_k
    done = None
    if saved is None:
        meta = _io.read_meta(checkpoint)
        training = meta.get("training") if meta else None
        saved = training.get("settings") if isinstance(training, dict) else None
        if not isinstance(saved, dict) or not isinstance(meta.get("checkpoint"), dict):
            return settings, None         # Trainer.fit gives the precise error
        done = meta["checkpoint"].get("epoch")
    merged = dict(settings)
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
            if not same and key != "monitor_size":
                raise UsageError(
                    f"{option} {_show(option, now)} conflicts with the checkpoint "
                    f"'{checkpoint}'{'' if layer is None else f' (layer {layer})'}, made "
                    f"with {option} {_show(option, was)}; leave {option} "
                    f"out to continue as it was, or train afresh without --resume.")
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
          checkpoint, "npz")],
        [("the training data DATA", _data_file(args["DATA"]))])
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
        parts.append(f"pseudo-log-likelihood {record['pseudo_log_likelihood']:.4f}")
    return "  ".join(parts)


def cmd_train(args, out):
    from cyrbm.datasets import load_data
    from cyrbm.training import Trainer

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

    def report(record):
        if lines:
            print(epoch_line(record), file=sys.stderr, flush=True)

    data = load_data(args["DATA"], binarize=binarize, threshold=threshold,
                     seed=settings["seed"])
    sampler = {key: settings[key] for key in ("temperatures", "chains", "hop_prob", "modes",
                                              "radius", "hop_weight")
               if settings.get(key) is not None}
    trainer = Trainer(
        settings["n_hidden"], method=settings["method"], k=settings["k"],
        epochs=settings["epochs"], batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"], lr_decay=settings["lr_decay"],
        momentum=settings["momentum"], weight_decay=settings["weight_decay"],
        seed=settings["seed"], threads=threads, dtype=settings["dtype"],
        checkpoint=checkpoint, checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        monitor_size=settings["monitor_size"],
        progress=False if (args["--no-progress"] or quiet) else None, callback=report,
        **sampler)
    t0 = time.perf_counter()
    try:
        model = trainer.fit(data, resume=resume)
    except KeyboardInterrupt as exc:
        if trainer.saved_on_interrupt:
            print(f"cyrbm train: {stop_word(exc)}: the state was saved to '{checkpoint}'; "
                  f"continue with --resume.", file=sys.stderr)
        else:
            print(f"cyrbm train: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)
    model.meta["training"]["data"] = args["DATA"]
    model.save(model_path)
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
        "history": trainer.history,
    }
    if args["--json"]:
        print(json.dumps(result))
    else:
        ramp = (f" (k from {trainer.k_first} to {trainer.k_last} over epochs 1-"
                f"{trainer.k_span}, then {trainer.k_last})"
                if trainer.k_first != trainer.k_last and trainer.k_span < trainer.epochs else "")
        print(f"trained a {model.n_visible} x {model.n_hidden} RBM by {trainer.method.upper()}-"
              f"{trainer.k}{ramp} on {data.shape[0]} rows of '{args['DATA']}' "
              f"({trainer.epochs} epochs, {result['seconds']:.2f} s)", file=out)
        if last.get("pseudo_log_likelihood") is not None:
            print(f"pseudo-log-likelihood per sample {last['pseudo_log_likelihood']:.4f} nats, "
                  f"reconstruction error {last['reconstruction_error']:.4f}", file=out)
        print(f"wrote {model_path}" + (f" (checkpoint {written})" if written else ""), file=out)
    return 0


# --------------------------------------------------------------------------- info
def _num(x, fmt=".4f"):
    """A number formatted, or shown as it is when it is not one (a crafted file)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return format(x, fmt)
    return str(x)


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
    if "layer0_W" in arrays or ("W" not in arrays and any(k.startswith("layer") for k in arrays)):
        from cyrbm._cli_dbn import dbn_info
        return dbn_info(path, arrays, out, args["--json"])
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
        print(f"  trained by {str(settings.get('method', '?')).upper()}-{k}, "
              f"{training.get('epochs_done')} epochs, batch {settings.get('batch_size')}, "
              f"lr {settings.get('learning_rate')}, seed {settings.get('seed')}"
              + (f", data '{training['data']}'" if training.get("data") else ""), file=out)
    if history:
        last = history[-1]
        if "pseudo_log_likelihood" in last:
            print(f"  last epoch: pseudo-log-likelihood {_num(last['pseudo_log_likelihood'])} "
                  f"nats, reconstruction error {_num(last.get('reconstruction_error'))}", file=out)
    return 0


# ----------------------------------------------------------------- ais, ratio, logz
def _end(x, sign):
    """An interval end: a number, or +-inf (JSON null) when the interval is unbounded."""
    return f"{sign}inf" if x is None or not math.isfinite(x) else f"{x:.4f}"


def _interval(pair):
    if pair is None:
        return "[n/a]"
    lo, hi = pair
    return f"[{_end(lo, '-')}, {_end(hi, '+')}]"


def print_measure(name, r, out):
    """The result of ais / ratio / logz as readable lines."""
    if name == "logz":
        print(f"ln Z = {r['log_Z']:.6f}  (exact, {r['terms']} terms over the "
              f"{r['enumerated_layer']} layer, {r['seconds']:.2f} s)", file=out)
        return
    if name == "evaluate":
        from cyrbm._cli_measure import print_evaluate
        print_evaluate(r, out)
        return
    _print_measure_estimate(name, r, out)
    if r.get("weight_warning"):
        print(f"warning: {r['weight_warning']}", file=out)


def _print_measure_estimate(name, r, out):
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
    starts = ("exact draws of MODEL_A" if r.get("start") == "exact" else
              f"{r.get('chains')} Gibbs chains on MODEL_A, {r.get('burn_in')} sweeps of burn-in")
    print(f"  {r['runs']} runs from {starts}, {r['betas']} betas ({r['schedule']}), "
          f"effective sample size {r['ess']:.1f}, {r['seconds']:.2f} s", file=out)
    if r.get("log_Z") is not None:
        print(f"ln Z_B = {r['log_Z']:.4f}  ln(Z_B +- sigma) {_interval(r['log_Z_sigma_interval'])}  "
              f"ln(Z_B +- 3 sigma) {_interval(r['log_Z_3sigma_interval'])}  "
              f"(ln Z_A = {r['log_Z_base']:.4f}, exact)", file=out)
    if r.get("avg_log_prob") is not None:
        print(f"average of ln p_B(v) - ln p_A(v) over {r['n_data']} rows of '{r['data']}': "
              f"{r['avg_log_prob']:.4f} nats, 3 sigma interval "
              f"{_interval(r['avg_log_prob_3sigma_interval'])}", file=out)


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


def _dbn_command(name):
    def run(args, out):
        from cyrbm import _cli_dbn
        if name == "bound":
            return _cli_dbn.cmd_bound(args, out, args.get("__explicit__", ()))
        return _cli_dbn.cmd_dbn(args, out)
    return run
# ------------------------------------------------------------------ sample, filters
_SAMPLERS = ("gibbs", "pt")


def cmd_sample(args, out):
    from cyrbm import _io, images
    from cyrbm.models import RBM
    n = _whole(args, "--n", 1)
    steps = _whole(args, "--steps", 0)
    seed = _whole(args, "--seed", 0)
    threads = parse_threads(args["--threads"])
    sampler = str(args["--sampler"]).strip().lower()
    if sampler not in _SAMPLERS:
        raise UsageError(f"--sampler must be {' or '.join(_SAMPLERS)}, not {args['--sampler']!r}.")
    _io.check_outputs([("-o", args["--output"], "png")], [("the model file MODEL", args["MODEL"])])
    model = RBM.load(args["MODEL"])
    shape = images.image_shape(model.n_visible, args["--shape"])
    samples = model.sample(n, steps, seed=seed, threads=threads, sampler=sampler)
    width, height = images.save_samples(args["--output"], samples, shape)
    print(f"wrote {args['--output']}: {n} samples of {shape[0]}x{shape[1]} pixels after "
          f"{steps} {sampler} sweeps (seed {seed}), a {width}x{height} image", file=out)
    return 0


def cmd_filters(args, out):
    from cyrbm import _io, images
    from cyrbm.models import RBM
    n = _whole(args, "--n", 1)
    _io.check_outputs([("-o", args["--output"], "png")], [("the model file MODEL", args["MODEL"])])
    model = RBM.load(args["MODEL"])
    shape = images.image_shape(model.n_visible, args["--shape"])
    n = min(n, model.n_hidden)
    width, height = images.save_filters(args["--output"], model.W[:, :n], shape)
    print(f"wrote {args['--output']}: the weights of {n} of {model.n_hidden} hidden units "
          f"as {shape[0]}x{shape[1]} images, a {width}x{height} image", file=out)
    return 0


COMMANDS = {"train": cmd_train, "info": cmd_info, "ais": _measure("ais"),
            "ratio": _measure("ratio"), "logz": _measure("logz"),
            "dbn": _dbn_command("dbn"), "bound": _dbn_command("bound"),
            "sample": cmd_sample, "filters": cmd_filters, "evaluate": _measure("evaluate")}


def _one_sentence(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _OutputLost(Exception):
    """Writing the command's standard output failed; ``args[0]`` is the OSError."""


class _Stdout:
    """``sys.stdout`` while a command runs: a failure to write it (a full disk, a closed
    pipe) is raised as :class:`_OutputLost`, told apart from the command's own files."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _OutputLost(exc) from None

    def flush(self):
        try:
            self._stream.flush()
        except OSError as exc:
            raise _OutputLost(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _drop_stdout(stream):
    """Point the file descriptor of ``stream`` at /dev/null, so that the text still
    buffered is not written (and fails again) when Python exits."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    os.dup2(null, fd)
    os.close(null)


def _run(argv):
    args, problem = _parse(argv)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    command = next(name for name in COMMANDS if args.get(name))
    from cyrbm import _validation
    _validation.set_interface("cli" if command in ("train", "info", "sample", "filters", "dbn")
                              else "cli-measure")
    try:
        if "__explicit__" not in args:
            args["__explicit__"] = _explicit_options(argv)
        return COMMANDS[command](args, sys.stdout)
    except BrokenPipeError:          # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except (CyrbmError, ValueError, OSError) as exc:
        print(f"cyrbm {command}: error: {_one_sentence(exc)}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"cyrbm {command}: error: this machine has not enough memory for the sizes "
              f"asked for; use smaller ones.", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(f"cyrbm {command}: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)
    finally:
        _validation.set_interface("python")


def _run_writing_stdout(argv):
    """``_run(argv)`` with a failure to write standard output (a full disk: one sentence
    and status 1; a closed pipe, as under `| head`: quietly) told apart from the
    command's own files."""
    real = sys.stdout
    sys.stdout = _Stdout(real)
    try:
        code = _run(argv)
        sys.stdout.flush()           # a failure to write it is told here, not at exit
        return code
    except _OutputLost as lost:
        _drop_stdout(real)
        exc = lost.args[0]
        if isinstance(exc, BrokenPipeError):
            return 0
        command = argv[0] if argv and argv[0] in COMMANDS else None
        prefix = f"cyrbm {command}" if command else "cyrbm"
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        print(f"{prefix}: error: cannot write the output: {reason}.", file=sys.stderr)
        return 1
    finally:
        sys.stdout = real


def _single_threaded_blas(environ=os.environ):
    """The command's heavy work runs in cyrbm's OpenMP kernels; NumPy's BLAS only does
    small products (the training monitor, starting states), for which its own threads
    cost far more than they give when other programs share the cores (a 16 x 784 x 500
    product: 50 ms on 2 BLAS threads against 0.4 ms on one).  So the command's BLAS is
    single-threaded unless the user set its threads.  Must run before NumPy loads."""
    if "OMP_NUM_THREADS" in environ:
        return
    for key in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        environ.setdefault(key, "1")


def _terminate(signum, frame):
    raise Terminated


def _on_sigterm():
    """SIGTERM raises Terminated, a KeyboardInterrupt: the command stops as on Ctrl-C
    (long computations check between pieces of about 0.1 s) and exits with 143.  The
    previous handler, to restore; None when SIGTERM cannot be handled here."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        return None
    return signal.signal(signal.SIGTERM, _terminate)


def main(argv=None):
    if "numpy" not in sys.modules:
        _single_threaded_blas()
    previous = None
    try:
        previous = _on_sigterm()
        return _run_writing_stdout(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt as exc:   # e.g. while NumPy and the kernels are loading
        print(f"cyrbm: {stop_word(exc)}.", file=sys.stderr)
        return stop_status(exc)
    finally:
        if previous is not None:
            import signal
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
