"""The one-command docopt parse (cyrbm/cli/parse.py) gives what the full parse gives."""
import pytest
from docopt import docopt

from cyrbm import cli
from cyrbm.cli.parse import parse_command
from _commands import run

LINES = [
    ["bound", "m.npz", "--data", "d.npy", "--samples", "1", "--logz", "0", "--json"],
    ["bound", "m.npz", "--data", "d.npy", "--method", "chib", "--steps=5", "--repeats", "2",
     "--trace", "--plot", "x.png"],
    ["bound", "m.npz", "--data=d.npy", "--entr", "sampled"],
    ["train", "digits", "-o", "m.npz"],
    ["train", "digits", "-om.npz", "--hidden", "5", "--resume", "--epochs", "3"],
    ["train", "d", "-o", "m", "--method", "pt", "--temperatures", "adaptive:5", "--chains", "4"],
    ["info"], ["info", "m.npz", "--json"], ["ais", "m", "--data", "d", "--runs", "3"],
    ["ratio", "a", "b", "--start", "exact"], ["logz", "m", "--exact"],
    ["dbn", "d", "-o", "x", "--layers", "8,6", "--method", "pt", "--epochs", "1"],
    ["sample", "m", "-o", "i.png", "--n", "4"], ["filters", "m", "-o", "i.png"],
    ["evaluate", "m", "--data", "d", "--simulate", "5"],
]


@pytest.mark.parametrize("argv", LINES, ids=lambda a: " ".join(a[:2]))
def test_same_arguments_and_explicit_options_as_the_full_parse(argv):
    args, explicit = parse_command(cli.__doc__, argv, cli.COMMANDS)
    assert args == dict(docopt(cli.__doc__, argv))
    assert explicit == cli._explicit_options(argv)


@pytest.mark.parametrize("argv", [[], ["--version"], ["bound", "--help"], ["train"],
                                  ["bound", "m", "--bogus"],
                                  ["bound", "m", "--data", "d", "--samp", "3"]])
def test_anything_else_is_left_to_the_full_parse(argv):
    assert parse_command(cli.__doc__, argv, cli.COMMANDS) is None


@pytest.mark.parametrize("args,needle", [
    (["train", "digits", "-o", "m.npz", "--frobnicate"], "unknown option --frobnicate"),
    (["train", "digits", "-o", "m.npz", "--hiden", "3"], "did you mean --hidden?"),
    (["train", "digits"], "needs -o MODEL"),
    (["train"], "needs DATA"),
    (["trian", "digits"], "did you mean 'train'?"),
    (["info", "m.npz", "--exact"], "--exact does not apply to 'cyrbm info'"),
    (["ais", "m.npz", "--runs"], "--runs needs a value"),
    (["ratio", "a.npz"], "needs MODEL_B"),
    ([], "no command given"),
])
def test_usage_errors_are_one_sentence_and_a_usage_line(tmp_path, capsys, args, needle):
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert needle in lines[0] and lines[0].startswith("cyrbm") and lines[0].endswith(".")
    assert lines[1].startswith("usage: cyrbm") and "--help" in lines[1]
    assert "Option(" not in err and "Argument(" not in err
