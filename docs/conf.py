"""Sphinx configuration of cyrbm's documentation.

Build offline with ``pip install "cyrbm[docs]"`` then
``sphinx-build -W --keep-going -b html docs docs/_build/html`` (CI does, warnings as errors).
The command-line reference is generated from the ``cyrbm`` usage text at build time, and
the examples gallery runs every script under ``docs/examples`` and keeps its figures.
"""
import os
import sys
from pathlib import Path

import cyrbm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "cyrbm"
author = "cyrbm developers"
copyright = "cyrbm developers"
release = version = cyrbm.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "cli_reference",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "img/README*", "examples/README.txt", "examples/*.py"]
root_doc = "index"

html_theme = "pydata_sphinx_theme"
html_title = f"cyrbm {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path = []

autodoc_default_options = {"members": True, "inherited-members": False}
try:        # cyrbm.sklearn needs scikit-learn (the docs extra installs it)
    import sklearn  # noqa: F401
except ImportError:
    autodoc_mock_imports = ["sklearn"]
autodoc_typehints = "none"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

myst_heading_anchors = 3

os.environ.setdefault("MPLBACKEND", "Agg")
sphinx_gallery_conf = {
    "examples_dirs": ["examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}
