"""Sphinx configuration of the milsvm documentation (built by ``bash scripts/docs.sh``).

Sources are MyST Markdown (``*.md``) and a few reStructuredText files; the API reference comes
from the numpydoc docstrings (autodoc, autosummary, numpydoc), the gallery from
``docs/examples/plot_*.py`` (sphinx-gallery, executed at build time), and the generated pages
(decision table, estimator catalogue, API lists, command-line reference) from
``_ext/milsvm_docs.py``. The guide and tutorial toctrees take every page of their folder (glob), so
a page added there needs no edit here.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import milsvm  # noqa: E402
import milsvm_docs  # noqa: E402

milsvm_docs.generate(HERE)

project = "milsvm"
author = "the milsvm developers"
copyright = "the milsvm developers"
release = milsvm.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# examples/ holds the gallery's sources (sphinx-gallery renders them into auto_examples/);
# _generated/ holds the generated fragments, included by the pages that show them
exclude_patterns = [
    "_build",
    "examples",
    "_generated",
    "**/.ipynb_checkpoints",
    "sg_execution_times.rst",
]

# MyST: ```{directive} and ::: fences, definition lists, $math$, anchors for ## and ### headings
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "substitution"]
myst_heading_anchors = 3
# the core's constants, written as {{ NAME }} in the pages (each number stated once, in Rust)
myst_substitutions = milsvm_docs.core_constants()

# API reference
# the autosummary lists are generated fragments, included by api/index.md: name them for the
# stub generation (their toctree paths, ../api/generated, hold from either place)
autosummary_generate = [
    "api/index.md",
    "_generated/api_estimators.rst",
    "_generated/api_core.rst",
    "_generated/api_modules.rst",
]
autodoc_typehints = "none"
autodoc_member_order = "groupwise"


def _skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Leave out the members estimators inherit from scikit-learn (get_params, set_output,
    metadata routing, ...): they are documented there, and their cross-references point into
    scikit-learn's site."""
    module = getattr(obj, "__module__", None) or ""
    return True if module.startswith("sklearn.") else None


def setup(app):
    app.connect("autodoc-skip-member", _skip_scikit_learn_members)


# inherited members down to milsvm's own classes; scikit-learn's (get_params, score, ...) are
# documented there
autodoc_default_options = {
    "members": True,
    "inherited-members": "BaseEstimator, ClassifierMixin, TransformerMixin",
}
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",  # execute every example
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "min_reported_time": 1,
    # the "Examples using X" lists of the API pages
    "doc_module": ("milsvm",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"milsvm": None},
}

html_theme = "pydata_sphinx_theme"
html_title = f"milsvm {release}"
html_static_path = ["_static"]
html_css_files = ["milsvm.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
# top-level pages without subpages: no (empty) section navigation on the left
html_sidebars = {
    page: [] for page in ("index", "getting-started", "cli", "rust", "benchmarks", "about")
}
