# The package's docstring is the command's usage text (cyrbm --help), kept in parse.py.
from cyrbm.cli.parse import USAGE as __doc__  # noqa: F401
from cyrbm.cli.main import COMMANDS, main  # noqa: F401
from cyrbm.cli.parse import _explicit_options  # noqa: F401


def __getattr__(name):
    # print_measure needs NumPy; it is imported when first asked for (PEP 562)
    if name == "print_measure":
        from cyrbm.cli.measure import print_measure
        return print_measure
    raise AttributeError(f"module 'cyrbm.cli' has no attribute {name!r}")
