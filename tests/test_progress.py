"""Live progress of long fits (``verbose``): one report per SparseMI iteration and per
annealing temperature / mi-SVM round, matching the recorded objective history; a tqdm bar on
stderr only when it is a terminal."""

import io
import re

import milsvm
import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def bags_and_labels(n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(18) % n_classes
    bags = []
    for label in y:
        bag = rng.normal(size=(3, 2))
        bag[0] += 3.0 * label
        bags.append(bag)
    return bags, y


def step_lines(text, name):
    return [ln for ln in text.splitlines() if ln.startswith(f"[{name}]") and " step " in ln]


def objectives(lines):
    return np.array([float(re.search(r"objective (\S+)$", ln).group(1)) for ln in lines])


def test_sparse_mi_reports_every_iteration(capsys):
    bags, y = bags_and_labels()
    est = milsvm.SparseMI(n_xv=3, C=10.0, max_iter=6, random_state=0, verbose=2).fit(bags, y)
    lines = step_lines(capsys.readouterr().out, "SparseMI")
    assert len(lines) == est.n_iter_
    np.testing.assert_allclose(objectives(lines), est.objective_history_[1:], rtol=1e-5)
    assert lines[0].startswith("[SparseMI] step 1/6")


@pytest.mark.parametrize(
    "cls, n_classes", [(milsvm.ALSVM, 2), (milsvm.AWSVM, 2), (milsvm.miSVM, 2), (milsvm.ALSVM, 3)]
)
def test_annealing_reports_every_temperature_or_round(cls, n_classes, capsys):
    bags, y = bags_and_labels(n_classes)
    kw = {"max_iter": 10} if cls is milsvm.miSVM else {"max_iter": 8}
    est = cls(C=10.0, verbose=2, **kw).fit(bags, y)
    lines = step_lines(capsys.readouterr().out, cls.__name__)
    histories = est.objective_history_ if n_classes == 2 else est.objective_history_
    histories = [histories] if n_classes == 2 else histories
    assert len(lines) == sum(len(h) for h in histories)
    if n_classes == 2:
        np.testing.assert_allclose(objectives(lines), histories[0], rtol=1e-5)
    if cls is not milsvm.miSVM:
        assert "(T = " in lines[0]


def test_no_output_when_quiet_and_no_bar_off_a_terminal(capsys):
    bags, y = bags_and_labels()
    milsvm.ALSVM(C=10.0, max_iter=5).fit(bags, y)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    milsvm.ALSVM(C=10.0, max_iter=5, verbose=1).fit(bags, y)
    out = capsys.readouterr()
    assert step_lines(out.out, "ALSVM") == [] and "it/s" not in out.err and "step/s" not in out.err


def test_progress_bar_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    bags, y = bags_and_labels()
    milsvm.ALSVM(C=10.0, max_iter=5, verbose=1).fit(bags, y)
    assert "ALSVM" in term.getvalue() and "step" in term.getvalue()


def test_verbose_must_be_an_int():
    bags, y = bags_and_labels()
    with pytest.raises(TypeError, match="verbose"):
        milsvm.SparseMI(verbose="loud").fit(bags, y)


@pytest.mark.parametrize(
    "make",
    [
        lambda: milsvm.SVMCC(C=10.0, max_iter=6, verbose=2),
        lambda: milsvm.OneClassMISVM(max_iter=4, verbose=2),
    ],
)
def test_svmcc_and_one_class_report_every_round(make, capsys):
    bags, y = bags_and_labels()
    est = make().fit(bags, y)
    lines = step_lines(capsys.readouterr().out, type(est).__name__)
    assert len(lines) == len(est.objective_history_)
    np.testing.assert_allclose(objectives(lines), est.objective_history_, rtol=1e-5)


def test_annealing_forecasts_its_steps_for_the_bar():
    """The core's forecast of the steps an annealing fit takes: never above the cap, bounded by
    the schedule (T0 = 10 C falls to eps C after ceil(ln(10 / eps) / ln(decay)) steps), at
    least one step beyond the steps run, and it lands on the steps actually run."""
    from milsvm import _core
    from milsvm._bags import as_bags

    bags, y = bags_and_labels()
    seen = []
    b = as_bags(bags)
    params = {"method": "al", "C": 10.0, "eps": 1e-4, "decay": 1.5}
    fit = _core.fit_annealing(
        b.core_instances(), b.bag_ptr, y.astype(np.int64), params, lambda *args: seen.append(args)
    )
    schedule = int(np.ceil(np.log(10.0 / 1e-4) / np.log(1.5))) + 1
    assert len(seen) == fit.n_iter[0]
    for _, step, cap, _, _, expected in seen:
        assert cap == 200 and step + 1 <= expected <= min(schedule, cap) or expected == step == cap
    assert seen[-1][5] in (fit.n_iter[0], fit.n_iter[0] + 1)


def test_the_bar_follows_the_forecast(monkeypatch):
    from milsvm._progress import FitProgress

    class Bar:
        def __init__(self, total, **kw):
            self.total, self.n = total, 0

        def update(self, k):
            self.n += k

        def set_postfix(self, **kw):
            pass

        def close(self):
            pass

    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    monkeypatch.setattr("sys.stderr", type("T", (io.StringIO,), {"isatty": lambda self: True})())
    with FitProgress("ALSVM", 1, "step", 400) as p:  # two problems of cap 200
        p(0, 1, 200, 1.0, 10.0, 30)
        assert p.bar.total == 230
        p(1, 1, 200, 1.0, 10.0, 25)
        assert p.bar.total == 55
        p(0, 2, 200, 1.0, 5.0, 3)
        assert p.bar.total == 28 and p.bar.n == 3
