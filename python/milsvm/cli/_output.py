"""What the ``milsvm`` command writes: output files checked before any work, progress and notes
on stderr."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

from ._values import CommandError


def _check_writable(path, option):
    """Fail before any work if ``path`` cannot be created (its directory is missing)."""
    if path is None:
        return
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise CommandError(
            f"{option}: cannot write {str(path)!r}: directory {str(parent)!r} does not exist"
        )
    if Path(path).is_dir():
        raise CommandError(f"{option}: {str(path)!r} is a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (
        Path(path).exists() and not os.access(path, os.W_OK)
    ):
        raise CommandError(f"{option}: cannot write {str(path)!r}: permission denied")


def _describe(name, params):
    from .._crossval import describe

    return describe(name, params)


class _Console:
    """Progress bar and notes on stderr (silent with ``--quiet``)."""

    def __init__(self, quiet):
        self.quiet = quiet

    def note(self, message):
        if not self.quiet:
            print(f"milsvm: {message}", file=sys.stderr)

    @contextlib.contextmanager
    def progress(self, total, desc):
        """A ``tqdm`` bar on stderr if it is a terminal (and not ``--quiet``); yields an
        ``update(n)`` callable."""
        show = not self.quiet and total > 1 and sys.stderr.isatty()
        bar = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                bar = None
            else:
                bar = tqdm(
                    total=total,
                    desc=desc,
                    unit="fit",
                    file=sys.stderr,
                    leave=False,
                    dynamic_ncols=True,
                )
        try:
            yield (bar.update if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()


@contextlib.contextmanager
def _warnings_as_lines(console):
    """Show Python warnings raised in this process as ``milsvm: warning: ...`` lines."""

    def show(message, category, filename, lineno, file=None, line=None):
        console.note(f"warning: {category.__name__}: {' '.join(str(message).split())}")

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield
