"""Live reports of a long fit, driven by the estimator's ``verbose``.

* 0: nothing;
* 1: a progress bar on stderr when stderr is a terminal (tqdm), and the fit summary;
* 2 or more: also one line per step with its objective (stdout).

The core calls :class:`FitProgress` at every outer step ``(problem, step, max_steps, objective,
temperature, expected_steps)`` from its fitting threads (never from the main thread, so a Ctrl-C
never lands inside it: the core's fit stops and ``KeyboardInterrupt`` is raised by the fit call
itself).
"""

from __future__ import annotations

import sys

__all__ = ["FitProgress"]


class FitProgress:
    """Progress of one fit; use as a context manager, pass :meth:`callback` to the core.

    Parameters
    ----------
    name : str
        The estimator's class name, which labels the bar and the lines.
    verbose : int
        The level (see the module docs).
    unit : str or None
        What a step is ("iteration", "step", "round"); ``None``: the estimator reports no
        steps.
    total : int
        The largest number of steps, 0 when it is not known (a bar without a length). The
        bar's length starts there and follows the fit's own forecast of its steps
        (``expected_steps``): an annealing fit stops once the labels settle, usually long
        before ``max_iter``, and says so as it goes, so the bar's ETA is that of the steps the
        fit expects, not of the cap.
    """

    def __init__(self, name, verbose, unit, total):
        self.name = name
        self.verbose = verbose
        self.unit = unit
        self.total = total
        self.saving = {}  # per problem: the steps below its cap it expects to stop at
        self.bar = None
        if (
            unit is not None
            and self.verbose >= 1
            and sys.stderr is not None
            and sys.stderr.isatty()
        ):
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=total or None, unit=unit, desc=self.name, leave=False, file=sys.stderr
            )

    def callback(self):
        """The callback for the core, or ``None`` when nothing is reported."""
        if self.unit is None:
            return None
        return self if (self.bar is not None or self.verbose >= 2) else None

    def __call__(self, problem, step, max_steps, objective, temperature, expected_steps=None):
        expected = max_steps if expected_steps is None else min(expected_steps, max_steps)
        if self.bar is not None and self.total:
            self.saving[problem] = max_steps - expected
            total = max(self.total - sum(self.saving.values()), self.bar.n + 1)
            if total != self.bar.total:
                self.bar.total = total
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(objective=f"{objective:.6g}", refresh=False)
        if self.verbose >= 2:
            where = f"problem {problem}, " if problem else ""
            temp = "" if temperature is None else f" (T = {temperature:.4g})"
            of = (
                f"{max_steps}"
                if expected == max_steps
                else f"~{expected} expected, cap {max_steps}"
            )
            print(
                f"[{self.name}] {where}step {step}/{of}{temp}: objective {objective:.6g}",
                flush=True,
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
