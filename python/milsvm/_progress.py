"""Live reports of a long fit, driven by the estimator's ``verbose``.

* 0: nothing;
* 1: a progress bar on stderr when stderr is a terminal (tqdm), and the fit summary;
* 2 or more: also one line per step with its objective (stdout).

The core calls :class:`FitProgress` at every outer step ``(problem, step, max_steps, objective,
temperature)`` from its fitting threads (never from the main thread, so a Ctrl-C never lands
inside it: the core's fit stops and ``KeyboardInterrupt`` is raised by the fit call itself).
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
        The largest number of steps (a bar's length; an annealing fit usually stops earlier,
        and the bar then closes early); 0 when it is not known (a bar without a length).
    """

    def __init__(self, name, verbose, unit, total):
        self.name = name
        self.verbose = verbose
        self.unit = unit
        self.bar = None
        if unit is not None and self.verbose >= 1 and sys.stderr is not None and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total or None, unit=unit, desc=self.name, leave=False, file=sys.stderr)

    def callback(self):
        """The callback for the core, or ``None`` when nothing is reported."""
        if self.unit is None:
            return None
        return self if (self.bar is not None or self.verbose >= 2) else None

    def __call__(self, problem, step, max_steps, objective, temperature):
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(objective=f"{objective:.6g}", refresh=False)
        if self.verbose >= 2:
            where = f"problem {problem}, " if problem else ""
            temp = "" if temperature is None else f" (T = {temperature:.4g})"
            print(f"[{self.name}] {where}step {step}/{max_steps}{temp}: objective {objective:.6g}", flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
