"""Build-time generators of the documentation pages that come from the code.

Run by ``conf.py`` before Sphinx reads the sources; each writes one file under ``docs/_generated/``
(git-ignored), only when its text changed, and a page includes it:

- ``estimator_table.md``: the decision table over every estimator of the registry
  (:mod:`milsvm._registry`), with what each class declares and the judgements of
  ``estimator_facets.py`` (``guide/choosing.md``);
- ``api_estimators.rst``, ``api_core.rst``, ``api_modules.rst``: the autosummary lists of the
  estimators (from the registry), of the other names of ``milsvm.__all__``, and of every public
  submodule with names of its own (from its ``__all__``) (``api/index.md``);
- ``cli.md``, ``models.md``: the help of the ``milsvm`` command and of each subcommand, from
  :func:`milsvm.cli.build_parser`, and what ``milsvm models`` prints (``cli.md``);
- ``guide_toctree.md``: the guide's table of contents, every page of ``docs/guide/`` in it
  (``guide/index.md``);
- ``results.md``: ``benches/RESULTS.md`` with its links made to work on the site
  (``benchmarks.md``);
- ``bench_drivers.md``: the benchmark drivers of ``benches/`` and the benchmarks each names, from
  their ``BENCHMARKS`` (``benchmarks.md``).
"""

from __future__ import annotations

import inspect
import io
import os
import re
from contextlib import redirect_stdout
from pathlib import Path

from estimator_facets import FACETS


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (keeps Sphinx's incremental build)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _estimators():
    import milsvm  # noqa: F401  (importing the package registers every estimator)
    from milsvm._registry import ESTIMATORS

    missing = sorted(set(ESTIMATORS) - set(FACETS))
    extra = sorted(set(FACETS) - set(ESTIMATORS))
    if missing or extra:
        raise RuntimeError(
            f"docs/_ext/estimator_facets.py does not match the registry: no entry for {missing}, "
            f"entries for unknown estimators {extra}"
        )
    return ESTIMATORS


def _defaults(cls):
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self"
    }


def core_constants() -> dict:
    """The public constants of the compiled core (``AUTO_FULL_BASIS_MAX``, ...) by name, as the
    pages show them (thousands separated), for MyST's ``{{ NAME }}`` substitutions."""
    from milsvm import _core

    return {
        name: f"{value:,}"
        for name, value in vars(_core).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def estimator_table() -> str:
    """The decision table in two parts, one row per estimator in registry order: what each is
    for (model, data size, speed, instance scores), then what it offers (family, kernels, linear
    route, ``C`` path, classes)."""
    from milsvm._registry import summary

    when = ["| Estimator | Model | Data size | Speed | Instance scores |", "|---|---|---|---|---|"]
    offers = [
        "| Estimator | Family | Kernels | Linear route | `C` path | Classes |",
        "|---|---|---|---|---|---|",
    ]
    for name, cls in _estimators().items():
        facets, defaults = FACETS[name], _defaults(cls)
        kernel = defaults.get("kernel")
        kernels = f"rbf, linear (default {kernel})" if kernel else "rbf"
        linear = "yes (`solver`)" if "solver" in defaults else "no"
        classes = "2 or more" if cls._multiclass else "2"
        ref = f"{{class}}`~milsvm.{name}`"
        when.append(
            f"| {ref} | {_cell(facets['model'])} | {_cell(facets['size'])} | {facets['speed']} | "
            f"{_cell(facets['instances'])} |"
        )
        offers.append(
            f"| {ref} | {_cell(facets['family'])} | {kernels} | {linear} | "
            f"{'yes' if cls._c_path else 'no'} | {classes} |"
        )
        assert summary(cls)
    return "\n".join(when) + "\n\nWhat each offers:\n\n" + "\n".join(offers) + "\n"


def api_estimators() -> str:
    names = "\n".join(f"   milsvm.{name}" for name in _estimators())
    return (
        f".. autosummary::\n   :toctree: ../api/generated\n   :template: estimator.rst\n\n{names}\n"
    )


def _autosummary(qualified) -> str:
    return ".. autosummary::\n   :toctree: ../api/generated\n\n" + "".join(
        f"   {q}\n" for q in qualified
    )


def api_core() -> str:
    """The top-level names that are no estimator (bags, scaler, model files)."""
    import milsvm

    skip = set(_estimators()) | {"__version__"}
    return _autosummary(f"milsvm.{n}" for n in milsvm.__all__ if n not in skip)


#: Public modules whose names the API reference does not list from ``__all__``: the command line
#: (documented by its own page, from argparse).
_NOT_API = {"cli"}


def public_modules():
    """The public submodules of milsvm with names of their own: every module without a leading
    underscore whose ``__all__`` is not simply re-exported by ``milsvm`` (the estimator family
    modules and ``preprocessing`` are), so that a module added to the package is listed."""
    import importlib
    import pkgutil

    import milsvm

    out = []
    for info in pkgutil.iter_modules(milsvm.__path__):
        if info.name.startswith("_") or info.name in _NOT_API:
            continue
        mod = importlib.import_module(f"milsvm.{info.name}")
        names = [n for n in getattr(mod, "__all__", []) if n not in milsvm.__all__]
        if names:
            out.append((f"milsvm.{info.name}", names))
    return out


def api_modules() -> str:
    """One section per public submodule: its docstring's first line and its names."""
    import importlib

    parts = []
    for module, names in public_modules():
        doc = (importlib.import_module(module).__doc__ or "").strip().split("\n\n")[0]
        title = f"``{module}``"
        parts.append(
            f"{title}\n{'-' * len(title)}\n\n{doc}\n\n"
            + _autosummary(f"{module}.{n}" for n in names)
        )
    return "\n".join(parts)


def cli_reference() -> str:
    """The help text of ``milsvm`` and of every subcommand, as argparse prints it."""
    import argparse

    from milsvm.cli import build_parser

    os.environ["COLUMNS"] = "100"  # one width, whatever the terminal of the build
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = ["## milsvm\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    for name, subparser in sub.choices.items():
        out.append(f"## milsvm {name}\n")
        out.append("```text\n" + subparser.format_help().rstrip() + "\n```\n")
    return "\n".join(out)


def models_listing() -> str:
    """What ``milsvm models`` prints (the estimator names and summaries)."""
    from milsvm.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["models"])
    return "```text\n$ milsvm models\n" + buf.getvalue().rstrip() + "\n```\n"


_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")


def results_page(repo: Path) -> str:
    """``benches/RESULTS.md`` for the benchmarks page: its title dropped (the page has its own),
    links to raw outputs under ``benches/results/`` made download links (checked: a missing file
    fails the build), links to other repository files written as their path (they are not pages
    of this site), links within the page and to the web kept."""
    source = repo / "benches" / "RESULTS.md"
    if not source.exists():
        return "The benchmark results are in `benches/RESULTS.md` of the repository.\n"
    text = source.read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        text = "\n".join(lines[1:]).lstrip("\n") + "\n"

    def link(match):
        label, target = match.group(1), match.group(2)
        if target.startswith(("#", "http://", "https://", "mailto:")):
            return match.group(0)
        path = (source.parent / target.split("#")[0]).resolve()
        if path.is_file() and (source.parent / "results") in path.parents:
            return f"[{label}](path:../{path.relative_to(repo).as_posix()})"
        shown = (
            path.relative_to(repo).as_posix() if repo in path.parents or path == repo else target
        )
        if label.strip("`") == target:  # the link's text is its target: show the repository path
            return f"`{shown}`"
        return label if "`" in label else f"{label} (`{shown}`)"

    return _LINK.sub(link, text)


#: The benchmark drivers of benches/, in the order the benchmarks page lists them.
BENCH_DRIVERS = ["papers", "peers", "speed", "scale", "studies", "serving"]


def bench_drivers(repo: Path) -> str:
    """One table per driver of ``benches/``: each benchmark's command and what it measures, read
    from the driver's ``BENCHMARKS`` (a driver imports only the standard library)."""
    import importlib.util
    import sys

    benches = repo / "benches"
    sys.path.insert(0, str(benches))
    try:
        parts = []
        for name in BENCH_DRIVERS:
            spec = importlib.util.spec_from_file_location(
                f"_bench_driver_{name}", benches / f"{name}.py"
            )
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            summary = " ".join(module.__doc__.split())
            rows = [
                f"| `python benches/{name}.py {key}` | {_cell(b.summary)} |"
                for key, b in module.BENCHMARKS.items()
            ]
            parts.append(
                f"## `{name}.py`\n\n{summary}\n\n| command | what |\n|---|---|\n"
                + "\n".join(rows)
                + "\n"
            )
        return "\n".join(parts)
    finally:
        sys.path.remove(str(benches))


#: The guide's pages in reading order; any other page of docs/guide/ follows them, by name.
GUIDE_ORDER = [
    "bags",
    "choosing",
    "estimators",
    "data",
    "model-selection",
    "probabilities",
    "explanations",
    "serving",
    "scale-out",
    "performance",
]


def guide_toctree(docs: Path) -> str:
    """The guide's toctree: the pages of ``GUIDE_ORDER``, then every other page of the folder (a
    glob would do the second part, but warns when it matches nothing)."""
    pages = sorted(p.stem for p in (docs / "guide").glob("*.md") if p.stem != "index")
    missing = [name for name in GUIDE_ORDER if name not in pages]
    if missing:
        raise RuntimeError(f"docs/guide has no page {missing} named in GUIDE_ORDER")
    entries = GUIDE_ORDER + [p for p in pages if p not in GUIDE_ORDER]
    return "```{toctree}\n:maxdepth: 2\n\n" + "\n".join(entries) + "\n```\n"


def generate(docs: Path) -> None:
    out = docs / "_generated"
    _write(out / "estimator_table.md", estimator_table())
    _write(out / "api_estimators.rst", api_estimators())
    _write(out / "api_core.rst", api_core())
    _write(out / "api_modules.rst", api_modules())
    _write(out / "cli.md", cli_reference())
    _write(out / "models.md", models_listing())
    _write(out / "results.md", results_page(docs.resolve().parent))
    _write(out / "bench_drivers.md", bench_drivers(docs.resolve().parent))
    _write(out / "guide_toctree.md", guide_toctree(docs))


__all__ = ["generate", "estimator_table", "cli_reference", "public_modules"]
