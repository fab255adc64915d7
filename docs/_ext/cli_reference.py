"""Sphinx extension: the command-line reference, generated from the usage text.

``cyrbm``'s docopt usage (the module docstring of :mod:`cyrbm.cli`) is the one statement
of its commands, options and defaults; this writes it into ``reference/cli_usage.txt`` at
build time, which ``reference/cli.rst`` includes, so the reference cannot drift from the
parser.
"""
from pathlib import Path


def _write_usage(app):
    import cyrbm.cli

    target = Path(app.srcdir) / "reference" / "cli_usage.txt"
    text = cyrbm.cli.__doc__.strip() + "\n"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def setup(app):
    app.connect("builder-inited", _write_usage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
