"""The command line's usage text and its one docopt parse.

The usage text (``USAGE``, also ``cyrbm.cli.USAGE`` and ``cyrbm --help``) is the one
statement of every command, option and default.  docopt's answer for one command, at a fifth of the cost, and which options were given.

docopt's time grows with the size of the usage it matches (about 8 ms for cyrbm's whole
usage, paid once for the values and once more, without the defaults, for the options
given explicitly).  :func:`parse_command` matches the command line against the usage lines of
its command alone, without defaults (so what it finds is what was given), and fills in
every other key of the full usage from the patterns and defaults docopt itself reads
from the text: the same dictionary as ``docopt(doc, argv)`` for any command line that
the full usage accepts.  Anything else (no command, help, version, a usage error) is
left to the full parse, which reports it.
"""
import re

import cyrbm
from cyrbm import defaults

#: the usage text, with the API's defaults (cyrbm.defaults) formatted in as {d.NAME}
_USAGE = """cyrbm - fast, measurable Restricted Boltzmann Machines.

Usage:
  cyrbm train DATA -o MODEL [--hidden N] [--method METHOD] [--k K] [--epochs E]
              [--batch B] [--lr LR] [--lr-decay N0] [--momentum MOM]
              [--weight-decay L2] [--seed S] [--threads T] [--dtype DTYPE]
              [--checkpoint FILE] [--checkpoint-every N] [--checkpoint-seconds S]
              [--resume] [--binarize MODE] [--threshold X] [--monitor N]
              [--no-progress] [--json]
              [--temperatures T] [--chains C] [--hop-prob P] [--modes K] [--radius R]
              [--hop-weight W] [--swap-threshold X] [--max-rungs N] [--visible TYPE]
              [--track-logz] [--tracker NAME] [--track-every N]
              [--track-refine N] [--track-overlap X]
              [--data DATA] [--plot FILE] [--sigma S] [--learn-sigma] [--whiten KIND]
              [--lateral] [--reconstruction HOW]
  cyrbm info [MODEL] [--json]
  cyrbm ais MODEL [--data DATA] [--base-data DATA] [--runs R] [--schedule SCHED]
              [--seed S] [--threads T] [--json] [--scheduler ADDRESS]
  cyrbm ratio MODEL_A MODEL_B [--data DATA] [--runs R] [--schedule SCHED]
              [--start HOW] [--burn-in N] [--chains C] [--steps-between N] [--seed S]
              [--threads T] [--json] [--scheduler ADDRESS]
  cyrbm logz MODEL [--exact] [--threads T] [--json]
  cyrbm dbn DATA -o DBN --layers SIZES [--method METHOD] [--k K] [--epochs E]
              [--batch B] [--lr LR] [--lr-decay N0] [--momentum MOM]
              [--weight-decay L2] [--seed S] [--threads T] [--dtype DTYPE]
              [--checkpoint FILE] [--resume] [--init-transpose] [--binarize MODE]
              [--threshold X] [--monitor N] [--no-progress] [--json]
              [--layer-input INPUT] [--visible TYPE] [--whiten KIND] [--top KIND]
              [--reconstruction HOW]
  cyrbm bound DBN --data DATA [--method METHOD] [--samples M] [--entropy E]
              [--steps S] [--repeats R] [--trace] [--plot FILE] [--logz VALUE]
              [--runs R] [--schedule SCHED] [--seed S] [--threads T] [--json]
              [--scheduler ADDRESS] [--checkpoint FILE]
  cyrbm sample MODEL -o IMAGE [--n N] [--steps S] [--sampler SAMPLER] [--shape HxW]
              [--ladder FILES] [--seed S] [--threads T]
  cyrbm filters MODEL -o IMAGE [--n N] [--shape HxW]
  cyrbm evaluate MODEL --data DATA [--base-data DATA] [--runs R] [--chains C]
              [--schedule SCHED] [--save-schedule FILE] [--simulate N] [--plot FILE]
              [--seed S] [--threads T] [--json] [--base-model A] [--base-logz VALUE]
              [--start HOW] [--burn-in N] [--scheduler ADDRESS]
  cyrbm sweep CONFIG -o DIR [--scheduler ADDRESS] [--no-progress] [--json]
  cyrbm -h | --help
  cyrbm --version

Commands:
  train   Train an RBM on DATA (a .npy/.npz/.csv/IDX file or a bundled name such as
          'digits'; 'patches', 'patches:test' or 'patches:train:IMAGES' are 20x20 grey
          image patches, real-valued) and write it to MODEL (.npz).
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
  sweep   Train every configuration of the grid in CONFIG (a JSON file) and measure
          each (AIS ln Z, test log-probability and its interval); write results.json,
          results.csv and the models to DIR, and name the best.

Options:
  -o FILE, --output FILE     File to write: the model (.npz) of train, the image
                             (.png) of sample and filters; sweep: a directory.
  --hidden N                 Hidden units [default: {d.N_HIDDEN}].
  --method METHOD            cd, pcd (persistent CD / SML), pt (parallel tempering,
                             Cho et al. 2010), amh (mode-hopping SML, Hu & Yu) or ptt
                             (parallel trajectory tempering, Bereux et al. 2025: chains
                             at the training's own earlier models) [default: {d.METHOD}].
  --temperatures T           pt: the ladder (T scales W, as in CRI10; with --visible
                             gaussian or --lateral it scales W, the hidden biases and
                             L too), N temperatures evenly spaced from 0 to 1,
                             a list such as 0,0.5,1 (rising, ending at 1), or
                             adaptive:N (spacing re-tuned for equal swap rates)
                             (default: 0, 0.05, ..., 1).
  --swap-threshold X         ptt: freeze the current model as a new rung when its swap
                             rate with the last rung falls below X (default: {d.SWAP_THRESHOLD}).
  --max-rungs N              ptt: at most N models in the ladder (default: {d.MAX_RUNGS}).
  --hop-prob P               amh: probability of a mode-hopping proposal per chain
                             and update, in [0, 1] (default: {d.HOP_PROB}).
  --modes K                  amh: capacity of the mode set, at least 1 (default: {d.MODES}).
  --radius R                 amh: least Hamming distance between modes (default: a
                             tenth of the visible units).
  --hop-weight W             amh: weights of the hops between modes: uniform, prob or
                             distance (default: {d.HOP_WEIGHT}).
  --k K                      Gibbs steps per update (pt: rounds of the ladders per
                             update); FIRST:LAST raises k linearly over the epochs, as
                             in SM08's CD25 (e.g. 1:25; FIRST <= LAST; a resumed run
                             keeps LAST after the first run's epochs) [default: {d.K}].
  --epochs E                 Total epochs [default: {d.EPOCHS}].
  --batch B                  Mini-batch size [default: {d.BATCH_SIZE}].
  --lr LR                    Learning rate eta_0 [default: {d.LEARNING_RATE}].
  --lr-decay N0              Search-then-converge: eta_0 / (1 + updates / N0)
                             (default: constant).
  --momentum MOM             Momentum [default: {d.MOMENTUM}].
  --weight-decay L2          L2 weight decay on W [default: {d.WEIGHT_DECAY}].
  --seed S                   The one seed behind every random choice [default: {d.SEED}].
  --threads T                OpenMP threads; 0 or absent: chosen by the size of
                             the work, at most one per core (results do not
                             depend on it).
  --dtype DTYPE              float32 or float64 [default: float32].
  --visible TYPE             train: binary, or gaussian (a Gaussian RBM of unit
                             sigma on real-valued DATA, standardised or whitened;
                             methods cd, pcd, pt and ptt); dbn: the bottom layer's visible
                             units [default: binary].
  --top KIND                 dbn: the top layer, rbm or srbm (a semi-restricted
                             Boltzmann machine: lateral connections among its visible
                             units, trained by CD with mean-field; MS09 Sec. 5.2)
                             [default: rbm].
  --lateral                  train: an SRBM (lateral connections among the binary
                             visible units; methods cd, pcd and amh with the
                             reconstruction gibbs, and pt and ptt, whose ladders are
                             swept by Gibbs).
  --reconstruction HOW       train --lateral, dbn --top srbm: the SRBM's negative
                             phase, mean-field (damped, Osindero & Hinton 2008) or
                             gibbs (sequential Gibbs sweeps) (default: mean-field).
  --sigma S                  train --visible gaussian: the visible units' standard
                             deviation, a positive number (default: 1).
  --learn-sigma              train --visible gaussian: learn sigma too (per unit).
  --whiten KIND              train, dbn --visible gaussian: whiten DATA first by zca,
                             pca or standardize, fitted on DATA and saved in MODEL
                             (DBN: in its bottom layer; a resumed dbn applies the
                             run's own, kept beside its checkpoints); ais, logz,
                             evaluate and bound apply it to --data and report ln p in
                             pixel space too (default: no whitening).
  --checkpoint FILE          Checkpoint file (default: MODEL with .ckpt.npz).  With
                             bound's methods chib and ais: keep the finished vectors
                             there (none by default); the same command run again goes
                             on from it, to the same numbers.
  --checkpoint-seconds S     Least seconds between checkpoints (0: after every
                             epoch); one is always written at the end and on
                             Ctrl-C [default: {d.CHECKPOINT_SECONDS:g}].
  --checkpoint-every N       Most epochs between checkpoints, however short the
                             time (default: by time only).
  --resume                   Continue from the checkpoint, up to --epochs in all;
                             settings left out are the checkpoint's.  The options
                             that may change are --epochs, --k, --lr, --lr-decay,
                             the --momentum, --weight-decay and --monitor (each
                             change is recorded in the history and printed); any
                             other that differs is refused.  dbn: a finished DBN
                             only takes more layers (--layers).
  --binarize MODE            Turn grey data into 0/1: threshold or stochastic.
  --threshold X              Threshold for --binarize threshold, after scaling to
                             [0, 1], strictly between 0 and 1 [default: 0.5].
  --monitor N                Training rows on which the reconstruction error and
                             pseudo-log-likelihood are recorded each epoch; auto:
                             200, fewer for large models (8 for 784 x 500) so that
                             monitoring stays a small part of an epoch [default: auto].
  --no-progress              No progress bar and no line per epoch.
  --track-logz               train: track ln Z through training (a ladder of the
                             model's checkpoints, the first exact, Bennett's
                             acceptance ratio over AIS both ways between neighbours)
                             and print it per epoch, with the mean log-likelihood of
                             the test data (--data) and its +- 3 se interval.
  --tracker NAME             train --track-logz: ladder (the above, every method) or
                             filter (method pt: a Kalman filter over ln Z at the
                             tempered ladders' temperatures from their own states,
                             DCB11; it drifts low on large models, see the user
                             guide) [default: ladder].
  --track-every N            train --track-logz: updates between the ladder's models
                             (default: one at the end of every epoch, and in the first
                             epoch after updates 1, 2, 4, 8, ...); for method pt,
                             between the filter's moves (default: every update).
  --track-refine N           train --track-logz: run a link short of overlap again with
                             more betas, up to N times (default: {d.TRACK_REFINE}).
  --track-overlap X          train --track-logz: also take the model as a rung when
                             its overlap with the last rung (the carried draws'
                             effective sample size over their number, checked every
                             {d.TRACK_OVERLAP_EVERY} updates) falls below X, in (0, 1).
  --data DATA                Data whose average log-probability to estimate; for
                             train with --track-logz, the test data of the learning
                             curve.
  --base-data DATA           Data to fit the base-rate model to (default: --data).
  --runs R                   AIS runs [default: {d.AIS_RUNS}].
  --schedule SCHED           paper, linear:K, or a text file of betas; evaluate also
                             takes adaptive:K (K betas tuned by a pilot run)
                             [default: {d.SCHEDULE}].
  --start HOW                Starting states of ratio runs: exact (draws from MODEL_A
                             by enumerating its smaller layer, up to 30 units), gibbs
                             (chains on MODEL_A), or auto: exact up to 20 units
                             (default: {d.RATIO_START}; evaluate: with --base-model only).
  --burn-in N                Gibbs sweeps before the first sample from MODEL_A: chains
                             started at data need many on trained models
                             (default: {d.RATIO_BURN_IN}; evaluate: with --base-model only).
  --chains C                 Gibbs chains on MODEL_A giving the runs' starting states;
                             each gives ceil(R / C) states (default: one per run).
                             evaluate: reverse (RAISE) chains per test row (default: {d.RAISE_CHAINS}).
                             train: pt's ladders, ptt's chains per rung (default: the
                             batch size).
  --steps-between N          Gibbs sweeps between the states a chain gives
                             [default: {d.RATIO_STEPS_BETWEEN}].
  --exact                    Enumerate (the only method of logz).
  --layers SIZES             Hidden-layer sizes of a DBN, bottom first (500,2000).
  --init-transpose           Start each DBN layer above the first as the transpose
                             of the one below (W2 = W1^T).
  --layer-input INPUT        What each DBN layer above the first is trained on:
                             samples of Q(h | below) or their probabilities (probs)
                             [default: samples].
  --samples M                Samples of Q per vector (bound; default: {d.VARIATIONAL_SAMPLES} for
                             variational, {d.HARMONIC_SAMPLES} for harmonic).
  --entropy E                analytic (SM08 Eq. 23) or sampled (-ln Q) [default:
                             analytic].
  --logz VALUE               ln Z of the top RBM, instead of estimating it by AIS.
  --n N                      Samples to draw, or hidden units to draw (the first N)
                             [default: 100].
  --steps S                  sample: Gibbs sweeps of each sample's chain, from
                             uniform random bits [default: {d.SAMPLE_STEPS}].  bound: Markov
                             chain steps S of chib (default {d.CHIB_STEPS}), betas of ais's
                             linear schedule (default {d.AIS_PER_VECTOR_BETAS}).
  --repeats R                bound: independent chib estimates per vector, averaged
                             in p (default {d.CHIB_REPEATS}); ais runs per vector (default {d.AIS_PER_VECTOR_RUNS}).
  --trace                    bound --method chib: the estimate at S = 1, 2, 5, 10,
                             20, 40 (up to --steps) as a table (MS09 Figure 2), and
                             as a figure with --plot FILE.
  --sampler SAMPLER          gibbs (block Gibbs, one chain per sample), pt (parallel
                             tempering: the T = 1 chain of a ladder of 21 temperatures
                             0, 0.05, ..., 1 per sample) or ptt (parallel trajectory
                             tempering: a chain at each of the --ladder models and at
                             MODEL, states swapped between neighbours) [default: gibbs].
  --ladder FILES             sample --sampler ptt: earlier models of MODEL's training
                             (e.g. its checkpoints), comma-separated, earliest first.
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
                             K; bound --trace: the estimates against S; train with
                             its --track-logz: the learning curve.
  --scheduler ADDRESS        Run on the Dask cluster of the scheduler at ADDRESS
                             (tcp://host:8786; the extra 'distributed'): the same
                             numbers as on this machine.
  --json                     Print the result as one JSON object.
  -h, --help                 Show this help.
  --version                  Show the version.

Errors are printed as one sentence on stderr, with a non-zero exit status.
"""
USAGE = _USAGE.format(d=defaults)


_DEFAULT = re.compile(r"\s*\[default: [^\]]*\]", re.IGNORECASE)


def _one_command(doc, command):
    """``doc`` with only the usage lines of ``command`` (continuation lines included)."""
    out, in_usage, keep = [], False, False
    for line in doc.splitlines():
        stripped = line.strip()
        if line.startswith("Usage:"):
            in_usage = True
            out.append(line)
            continue
        if in_usage:
            if not stripped:
                in_usage = False
                out.append(line)
                continue
            words = stripped.split()
            if len(words) > 1 and words[0] == "cyrbm" and not words[1].startswith("-"):
                keep = words[1] == command
            elif words[0] == "cyrbm":
                keep = False
            if keep:
                out.append(line)
            continue
        out.append(line)
    return "\n".join(out)


def _template(doc):
    """Every key of a full parse with its value when absent from the command line, as
    docopt reads them from ``doc``."""
    from docopt import formal_usage, parse_docstring_sections, parse_options, parse_pattern
    sections = parse_docstring_sections(doc)
    options = [*parse_options(sections.before_usage), *parse_options(sections.after_usage)]
    pattern = parse_pattern(formal_usage(sections.usage_body), options)
    return {leaf.name: leaf.value for leaf in pattern.flat()}


def parse_command(doc, argv, commands):
    """(args, explicit) as ``docopt(doc, argv)`` and the set of options given, or None
    when the full parse must decide (no known command first, or this match fails)."""
    from docopt import DocoptExit, DocoptLanguageError
    if not argv or argv[0] not in commands:
        return None
    try:
        template = _template(doc)
        args = _docopt_quiet(_DEFAULT.sub("", _one_command(doc, argv[0])), argv)
    except (DocoptExit, DocoptLanguageError, ImportError, AttributeError, TypeError,
            ValueError):
        return None
    explicit = {k for k, v in args.items() if k.startswith("-") and v not in (None, False)}
    out = dict(template)
    for key, value in args.items():
        if value not in (None, False) or key not in out:
            out[key] = value
    return out, explicit


def _docopt_quiet(doc, argv):
    from docopt import docopt
    return docopt(doc, argv=argv, default_help=False, version=None)


# --------------------------------------------------------------------- usage errors
_VALUE_OPTIONS = {
    "--output", "--hidden", "--method", "--k", "--epochs", "--batch", "--lr", "--lr-decay",
    "--momentum", "--weight-decay", "--seed", "--threads", "--dtype", "--checkpoint",
    "--checkpoint-every", "--checkpoint-seconds", "--binarize", "--threshold", "--monitor",
    "--data", "--base-data", "--visible",
    "--runs", "--schedule", "--start", "--burn-in", "--chains", "--steps-between",
    "--temperatures", "--hop-prob", "--modes", "--radius", "--hop-weight",
    "--swap-threshold", "--max-rungs", "--layers", "--samples", "--entropy", "--logz",
    "--n", "--steps", "--sampler", "--ladder", "--shape", "--save-schedule", "--simulate", "--plot",
    "--repeats", "--base-model", "--base-logz", "--layer-input", "--scheduler",
    "--track-every", "--track-refine", "--track-overlap", "--tracker", "--sigma", "--whiten", "--top", "--reconstruction",
}
_FLAG_OPTIONS = {"--resume", "--no-progress", "--json", "--exact", "--help", "--version",
                 "--init-transpose", "--trace", "--track-logz", "--learn-sigma",
                 "--lateral"}
_POSITIONALS = {"train": ["DATA"], "info": [], "ais": ["MODEL"], "ratio": ["MODEL_A", "MODEL_B"],
                "logz": ["MODEL"], "dbn": ["DATA"], "bound": ["DBN"],
                "sample": ["MODEL"], "filters": ["MODEL"],
                "evaluate": ["MODEL"], "sweep": ["CONFIG"]}
_OPTIONAL_POSITIONALS = {"info": ["MODEL"]}
_WHAT = {"DATA": "DATA (the training data)", "MODEL": "MODEL (a model file)",
         "MODEL_A": "MODEL_A and MODEL_B (two model files)",
         "MODEL_B": "MODEL_B (the second model file)", "DBN": "DBN (a DBN file)",
         "CONFIG": "CONFIG (a sweep's JSON file)"}


def _usage_lines():
    """{command: its usage line as one line} from the docstring."""
    block = USAGE.split("Usage:", 1)[1].split("\n\n", 1)[0]
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
        return "usage: cyrbm (train|info|ais|ratio|logz|sample|filters|evaluate|dbn|bound|sweep) ...; 'cyrbm --help' lists the options."
    required = " ".join(re.sub(r"\[[^\]]*\]", " ", line).split())
    return f"usage: {required} [options]; 'cyrbm --help' lists them."


def _usage_problem(argv):
    """(command or None, one sentence) saying why ``argv`` does not fit the usage."""
    if not argv:
        return None, "no command given (commands: train, info, ais, ratio, logz, sample, filters, evaluate, dbn, bound, sweep)."
    command = argv[0]
    if command not in _POSITIONALS:
        if command.startswith("-"):
            return None, f"unknown option {command!r} before the command."
        import difflib          # only for a usage error (6 ms at start-up otherwise)
        close = difflib.get_close_matches(command, list(_POSITIONALS), n=1)
        also = f" (did you mean '{close[0]}'?)" if close else " (commands: train, info, ais, ratio, logz, sample, filters, evaluate, dbn, bound, sweep)"
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
    if command == "sweep" and "--output" not in given:
        return command, "'cyrbm sweep' needs -o DIR, the directory to write the results to."
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
    fast = parse_command(USAGE, argv, tuple(_POSITIONALS))      # one command's usage: faster
    if fast is not None:
        args, explicit = fast
        args["__explicit__"] = explicit
        return args, None
    try:
        return docopt(USAGE, argv=argv, version=f"cyrbm {cyrbm.__version__}"), None
    except DocoptExit:
        command, sentence = _usage_problem(argv)
        prefix = f"cyrbm {command}" if command else "cyrbm"
        return None, f"{prefix}: error: {sentence}\n{_short_usage(command)}"


def _explicit_options(argv):
    """The options given on the command line (not filled in from defaults)."""
    from docopt import docopt
    bare = re.sub(r"\s*\[default: [^\]]*\]", "", USAGE)
    args = docopt(bare, argv=argv, version=f"cyrbm {cyrbm.__version__}")
    return {key for key, value in args.items()
            if key.startswith("-") and value not in (None, False)}
