"""docopt's answer for one command, at a fifth of the cost, and which options were given.

docopt's time grows with the size of the usage it matches (about 8 ms for cyrbm's whole
usage, paid once for the values and once more, without the defaults, for the options
given explicitly).  :func:`parse` matches the command line against the usage lines of
its command alone, without defaults (so what it finds is what was given), and fills in
every other key of the full usage from the patterns and defaults docopt itself reads
from the text: the same dictionary as ``docopt(doc, argv)`` for any command line that
the full usage accepts.  Anything else (no command, help, version, a usage error) is
left to the full parse, which reports it.
"""
import re

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


def parse(doc, argv, commands):
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
