"""One fit on Dask (:func:`milsvm.distributed.fit`): partitions held by worker processes, the
driver in this process, and the fitted model bit for bit the model of the in-process fit.

One module-scoped ``LocalCluster`` of two worker *processes* (``threads_per_worker=1``), as on a
real cluster: the partition kernels live in the workers, every message is pickled (the tests
that kill a worker start a cluster of their own, alike). Small data,
so that each fit runs in a second or two on a loaded machine. Needs ``milsvm[dask]`` (the
``test`` extra includes it); skipped without dask.
"""

import logging
import os
import signal

import milsvm
import numpy as np
import pytest
import scipy.sparse as sp
from milsvm.datasets import make_embedding_bags

pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")

import dask.bag as db  # noqa: E402
from milsvm.distributed import PartitionLost  # noqa: E402
from milsvm.distributed import fit as dfit  # noqa: E402

# the small fits stop at max_iter=3 (the in-process fits they are compared with too)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def client(dask_client):
    """The shared two-process LocalCluster's Client (tests/conftest.py)."""
    return dask_client


@pytest.fixture
def own_client():
    """A two-process LocalCluster of the test's own, for the tests that kill a worker: the
    fit under test needs only the surviving worker, and however long the killed worker's
    nanny takes to bring a new one up, the shared cluster of the other tests is untouched."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as own,
    ):
        yield own


@pytest.fixture(scope="module")
def data():
    """48 bags of about 12 instances in 4 dimensions, float32."""
    bags, y = make_embedding_bags(
        n_bags=48, mean_bag_size=12, n_features=4, separation=4.0, random_state=3
    )
    return [np.ascontiguousarray(b) for b in bags], np.asarray(y)


def small(cls):
    """``cls`` with the linear kernel, a loose inner tolerance and few rounds: a fit of few
    rounds of messages (every setting is the in-process fit's too)."""
    return cls(kernel="linear", C=1.0, inner_tol=1e-2, max_iter=3)


def collection(bags, n):
    """The bags in ``n`` partitions of contiguous bags, one of them empty when ``n >= 3``."""
    cuts = list(np.linspace(0, len(bags), n + 1).astype(int))
    if n >= 3:
        cuts[1] = cuts[0]  # the first partition empty
    parts = [bags[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    return db.from_delayed([_delayed_list(p) for p in parts])


def _delayed_list(part):
    import dask

    return dask.delayed(list, pure=True)(part)


def same_fit(a, b, bags):
    """Every fitted number of the two fits, bit for bit, and the model files byte for byte."""
    for name in ("objective_history_", "temperatures_", "decision_function"):
        x = getattr(a, name)
        y = getattr(b, name)
        if callable(x):
            x, y = x(bags), y(bags)
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), name
    assert len(a.p_) == len(b.p_)
    for u, v in zip(a.p_, b.p_):
        assert u.tobytes() == v.tobytes()
    for name in ("n_iter_", "n_solves_", "converged_", "p_hat_", "gamma_", "solver_"):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.classes_, b.classes_)


def model_bytes(est, tmp_path, tag):
    path = tmp_path / f"{tag}.json"
    est.save(str(path))
    return path.read_bytes()


@pytest.mark.parametrize(
    "cls, dtype, partitions",
    [
        (milsvm.MISVM, np.float32, 1),
        (milsvm.MISVM, np.float32, 2),
        (milsvm.MISVM, np.float32, 3),
        (milsvm.MISVM, np.float32, 5),
        (milsvm.MISVM, np.float32, 7),
        (milsvm.miSVM, np.float64, 2),
        (milsvm.miSVM, np.float64, 7),
        (milsvm.MISVM, np.float64, 3),
        (milsvm.miSVM, np.float32, 5),
        (milsvm.ALSVM, np.float32, 1),
        (milsvm.ALSVM, np.float32, 2),
        (milsvm.ALSVM, np.float64, 3),
        (milsvm.ALSVM, np.float32, 5),
        (milsvm.ALSVM, np.float64, 7),
        (milsvm.AWSVM, np.float32, 3),
        (milsvm.AWSVM, np.float64, 5),
        (milsvm.ALPSVM, np.float64, 2),
        (milsvm.ALPSVM, np.float32, 7),
    ],
)
def test_fit_equals_the_in_process_fit(client, data, tmp_path, cls, dtype, partitions):
    bags, y = data
    bags = [b.astype(dtype) for b in bags]
    est = small(cls)
    local = small(cls).fit(bags, y)
    remote = dfit(est, collection(bags, partitions), y, client=client)
    assert remote is est
    assert local.n_iter_ > 1  # the rounds (temperatures) ran, not only the first solve
    same_fit(local, remote, bags)
    assert model_bytes(local, tmp_path, "a") == model_bytes(remote, tmp_path, "b")
    assert remote.distributed_partitions_ == partitions
    assert remote.distributed_rounds_ > 2 * remote.n_solves_
    assert remote.distributed_bytes_ > 0
    assert remote.distributed_restores_ == 0


def small_sparse_mi(cls, **kw):
    """SparseMI / RSVM (the RBF kernel, ``gamma="scale"``) with few expansion vectors and
    outer iterations: a fit of few rounds (a fixed seed: the random starting points)."""
    if cls is milsvm.RSVM:
        return cls(n_xv=4, C=1.0, random_state=0, **kw)
    return cls(n_xv=4, C=1.0, max_iter=4, random_state=0, **kw)


def same_sparse_mi_fit(a, b, bags, tmp_path):
    """Every fitted number of two SparseMI / RSVM fits, bit for bit, and the model files byte
    for byte."""
    for name in ("objective_history_", "initial_xv_", "xv_", "coef_", "intercept_"):
        assert np.asarray(getattr(a, name)).tobytes() == np.asarray(getattr(b, name)).tobytes()
    for name in ("decision_function", "instance_decision_function"):
        x, y = getattr(a, name)(bags), getattr(b, name)(bags)
        if isinstance(x, list):  # instance scores: one array per bag
            x, y = np.concatenate(x), np.concatenate(y)
        assert x.tobytes() == y.tobytes(), name
    for name in ("n_iter_", "gamma_"):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.classes_, b.classes_)
    assert model_bytes(a, tmp_path, "a") == model_bytes(b, tmp_path, "b")


@pytest.mark.parametrize(
    "cls, dtype, partitions, n_classes",
    [
        (milsvm.SparseMI, np.float32, 1, 2),
        (milsvm.SparseMI, np.float32, 2, 2),
        (milsvm.SparseMI, np.float64, 3, 2),
        (milsvm.SparseMI, np.float32, 5, 2),
        (milsvm.SparseMI, np.float64, 7, 2),
        (milsvm.RSVM, np.float64, 2, 2),
        (milsvm.RSVM, np.float32, 5, 2),
        (milsvm.SparseMI, np.float32, 3, 3),
    ],
)
def test_sparse_mi_equals_the_in_process_fit(
    client, data, tmp_path, cls, dtype, partitions, n_classes
):
    bags, y = data
    bags = [b.astype(dtype) for b in bags]
    if n_classes == 3:
        y = np.where(np.arange(len(y)) % 3 == 0, 2, y)
    local = small_sparse_mi(cls).fit(bags, y)
    remote = dfit(small_sparse_mi(cls), collection(bags, partitions), y, client=client)
    if cls is milsvm.SparseMI:
        assert local.n_iter_ > 1  # the outer iterations ran
    same_sparse_mi_fit(local, remote, bags, tmp_path)
    assert remote.distributed_partitions_ == partitions
    # width, rows, the first evaluation; per iteration a gradient and at least one trial
    assert remote.distributed_rounds_ >= 3 + 2 * local.n_iter_
    assert remote.distributed_bytes_ > 0
    assert remote.distributed_restores_ == 0


def test_sparse_mi_with_given_init_and_linear_kernel(client, data, tmp_path):
    bags, y = data
    init = np.stack([bags[k][0] for k in (0, 5, 9)]).astype(np.float64)
    make = lambda: milsvm.SparseMI(n_xv=3, kernel="linear", init=init, max_iter=3, gamma=0.5)  # noqa: E731
    local = make().fit(bags, y)
    remote = dfit(make(), collection(bags, 3), y, client=client)
    same_sparse_mi_fit(local, remote, bags, tmp_path)
    again = dfit(make(), collection(bags, 3), y, client=client)  # twice: the same bits
    same_sparse_mi_fit(remote, again, bags, tmp_path)


@pytest.fixture(scope="module")
def wide_data():
    """48 bags of about 12 instances in 300 dimensions, float32: the partitions' products with
    the basis vectors are computed in blocks of rows that cross partitions, at a width where
    the products' bits depend on the blocks' shape."""
    bags, y = make_embedding_bags(
        n_bags=48, mean_bag_size=12, n_features=300, separation=4.0, random_state=5
    )
    return [np.ascontiguousarray(b) for b in bags], np.asarray(y)


@pytest.mark.parametrize(
    "dtype, partitions, n_classes, kernel, max_iter",
    [
        (np.float32, 1, 2, "rbf", 4),
        (np.float64, 2, 2, "rbf", 4),
        (np.float32, 3, 2, "rbf", 4),
        (np.float64, 5, 2, "rbf", 4),
        (np.float32, 7, 2, "rbf", 4),
        (np.float64, 3, 2, "rbf", 0),  # RSVM's fit (RSVM itself takes no n_basis)
        (np.float64, 5, 3, "rbf", 4),
        (np.float32, 2, 2, "linear", 4),
    ],
)
def test_sparse_mi_basis_mode_equals_the_in_process_fit(
    client, wide_data, tmp_path, dtype, partitions, n_classes, kernel, max_iter
):
    bags, y = wide_data
    bags = [b.astype(dtype) for b in bags]
    if n_classes == 3:
        y = np.where(np.arange(len(y)) % 3 == 0, 2, y)
    make = lambda: milsvm.SparseMI(  # noqa: E731
        n_xv=4, n_basis=20, kernel=kernel, max_iter=max_iter, C=1.0, random_state=0
    )
    local = make().fit(bags, y)
    remote = dfit(make(), collection(bags, partitions), y, client=client)
    if max_iter:
        assert local.n_iter_ > 1  # the outer iterations ran
    same_sparse_mi_fit(local, remote, bags, tmp_path)
    assert remote.distributed_partitions_ == partitions
    # width, rows, basis, the first evaluation; per iteration a gradient and a trial or more
    assert remote.distributed_rounds_ >= 4 + 2 * local.n_iter_
    assert remote.distributed_restores_ == 0


def test_sparse_mi_basis_mode_with_given_basis(client, wide_data, tmp_path):
    bags, y = wide_data
    init = np.stack([bags[k][1] for k in (0, 3, 7, 8, 20, 30)]).astype(np.float64)
    make = lambda: milsvm.SparseMI(n_xv=3, n_basis=6, init=init, max_iter=3, random_state=4)  # noqa: E731
    local = make().fit(bags, y)
    remote = dfit(make(), collection(bags, 3), y, client=client)
    same_sparse_mi_fit(local, remote, bags, tmp_path)
    again = dfit(make(), collection(bags, 3), y, client=client)  # twice: the same bits
    same_sparse_mi_fit(remote, again, bags, tmp_path)


def test_sparse_mi_basis_mode_with_a_sparse_basis(client, wide_data, tmp_path):
    """Basis vectors given as a sparse matrix (its columns out of order in a row, an explicit
    zero): each partition multiplies its rows by them as the fit in one process does."""
    bags, y = wide_data
    rng = np.random.default_rng(3)
    rows = [
        (np.sort(rng.choice(300, 12, replace=False))[::-1], rng.normal(size=12)) for _ in range(6)
    ]
    init = sp.csr_matrix(
        (
            np.concatenate([v for _, v in rows] + [[0.0]]),
            np.concatenate([j for j, _ in rows] + [[7]]),
            np.array([12 * k for k in range(6)] + [73]),
        ),
        shape=(6, 300),
    )
    assert not init.has_sorted_indices and 0.0 in init.data
    for classes in (2, 3):
        yk = y if classes == 2 else np.arange(len(y)) % 3
        make = lambda: milsvm.SparseMI(n_xv=3, n_basis=6, init=init, max_iter=3, random_state=4)  # noqa: E731
        local = make().fit(bags, yk)
        remote = dfit(make(), collection(bags, 3), yk, client=client)
        same_sparse_mi_fit(local, remote, bags, tmp_path)


def test_a_partition_s_size_follows_what_it_holds():
    """A partition's size (``sizeof``, as Dask asks) is its rows' and state's; after the round
    ``basis`` it holds its rows' products with the basis vectors in place of its rows (6
    float64 a row instead of 300 float32)."""
    from dask.sizeof import sizeof
    from milsvm import _core
    from milsvm.distributed._partitions import _Held

    x = np.random.default_rng(0).normal(size=(40, 300)).astype(np.float32)
    bag_ptr = np.array([0, 10, 25, 40], dtype=np.int64)
    problems = (np.array([[1.0, -1.0, 1.0]]), np.ones((1, 3)))
    kernel = _core.Partition.sparse_mi(x, bag_ptr, (0, 3, 0), problems, {"n_basis": 6})
    held = _Held(kernel)
    before = kernel.__sizeof__()
    assert x.nbytes + 8 * 40 <= before < x.nbytes + 64 * 40
    assert sizeof(held) >= before
    kernel.round("width", np.zeros(0), [0.5], 0)
    kernel.round("basis", np.full(6 * 300, 0.01), [40.0], 1)
    assert kernel.__sizeof__() == before - x.nbytes + 6 * 8 * 40
    assert sizeof(held) < x.nbytes


def test_twice_gives_the_same_bits_and_no_partition_moves(client, data, tmp_path):
    bags, y = data
    client.get_task_stream()  # drop earlier records
    with distributed.get_task_stream(client) as stream:
        a = dfit(small(milsvm.MISVM), collection(bags, 3), y, client=client)
    b = dfit(small(milsvm.MISVM), collection(bags, 3), y, client=client)
    same_fit(a, b, bags)
    assert model_bytes(a, tmp_path, "a") == model_bytes(b, tmp_path, "b")
    rounds = [r for r in stream.data if str(r["key"]).startswith("milsvm-round")]
    assert len(rounds) == 3 * a.distributed_rounds_
    moved = [
        (r["key"], s)
        for r in rounds
        for s in r.get("startstops", ())
        if s.get("action") == "transfer"
    ]
    assert moved == []


@pytest.mark.parametrize("name", ["MISVM", "SparseMI", "SparseMI-basis"])
def test_a_worker_killed_mid_fit(own_client, data, tmp_path, name):
    """A worker process dies while the tenth round runs: Dask rebuilds its partitions
    elsewhere, one restore round replays the fit's state-changing rounds on them, the tenth
    round is sent again, and the fit goes on to the undisturbed model. It costs the restore
    round only: every other round is the undisturbed fit's."""
    bags, y = data
    client = own_client
    make = {
        "MISVM": lambda: small(milsvm.MISVM),
        "SparseMI": lambda: small_sparse_mi(milsvm.SparseMI),
        "SparseMI-basis": lambda: small_sparse_mi(milsvm.SparseMI, n_basis=8),
    }[name]
    undisturbed = make().fit(bags, y)
    plain = dfit(make(), collection(bags, 4), y, client=client)
    killed = []

    def kill_in_round_ten(n, op):
        if n == 10 and not killed:
            killed.append(_kill_a_holder(client))

    est = dfit(make(), collection(bags, 4), y, client=client, _round_hook=kill_in_round_ten)
    assert killed
    if name == "MISVM":
        same_fit(undisturbed, est, bags)
        assert model_bytes(undisturbed, tmp_path, "a") == model_bytes(est, tmp_path, "b")
    else:
        same_sparse_mi_fit(undisturbed, est, bags, tmp_path)
    assert est.distributed_restores_ >= 1
    assert est.distributed_rounds_ == plain.distributed_rounds_ + est.distributed_restores_
    assert est.distributed_bytes_ > plain.distributed_bytes_


def test_a_worker_killed_without_restores_raises(own_client, data):
    bags, y = data
    client = own_client

    def kill_in_round_five(n, op):
        if n == 5:
            _kill_a_holder(client)

    est = small(milsvm.MISVM)
    with pytest.raises(PartitionLost, match=r"no restore round is left \(max_restores=0") as info:
        dfit(
            est,
            collection(bags, 4),
            y,
            client=client,
            max_restores=0,
            timeout=60,
            _round_hook=kill_in_round_five,
        )
    assert info.value.partitions
    assert not hasattr(est, "model_")


@pytest.mark.parametrize("name", ["MISVM", "ALSVM", "SparseMI"])
def test_progress_is_the_in_process_fits(client, data, capsys, name):
    """``verbose=2``: the same step lines (objectives, temperatures) as the in-process fit."""
    bags, y = data
    if name == "SparseMI":
        make = lambda: small_sparse_mi(milsvm.SparseMI, verbose=2)  # noqa: E731
    else:
        make = lambda: small(getattr(milsvm, name)).set_params(verbose=2)  # noqa: E731
    make().fit(bags, y)
    local = [ln for ln in capsys.readouterr().out.splitlines() if " step " in ln]
    dfit(make(), collection(bags, 3), y, client=client)
    remote = [ln for ln in capsys.readouterr().out.splitlines() if " step " in ln]
    assert local and remote == local


def _round_keys(dask_scheduler):
    return [str(k) for k in dask_scheduler.tasks if str(k).startswith("milsvm-round")]


@pytest.mark.parametrize("where", ["round", "progress"])
def test_ctrl_c_cancels_the_fit(client, data, where):
    """A ``KeyboardInterrupt`` while a round's tasks run (what Ctrl-C raises in the driver),
    or from the progress callback: raised, the round's tasks cancelled, the estimator left
    unfitted, and the cluster free for the next fit."""
    import time

    from milsvm import _progress

    bags, y = data

    def interrupt(*args):
        raise KeyboardInterrupt

    est = small(milsvm.MISVM)
    kw = {}
    if where == "round":
        kw["_round_hook"] = lambda n, op: interrupt() if n == 7 else None
    else:
        est.set_params(verbose=2)
    original = _progress.FitProgress.__call__
    try:
        if where == "progress":
            _progress.FitProgress.__call__ = interrupt
        with pytest.raises(KeyboardInterrupt):
            dfit(est, collection(bags, 2), y, client=client, **kw)
    finally:
        _progress.FitProgress.__call__ = original
    assert not hasattr(est, "model_") and not hasattr(est, "distributed_rounds_")
    deadline = time.monotonic() + 30
    while client.run_on_scheduler(_round_keys) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.run_on_scheduler(_round_keys) == []
    again = dfit(small(milsvm.MISVM), collection(bags, 2), y, client=client)
    same_fit(small(milsvm.MISVM).fit(bags, y), again, bags)


def _kill_a_holder(client):
    """Kills the process of a worker that holds a partition kernel; its address."""
    holders = [
        w for w, keys in client.has_what().items() if any("_build_partition" in k for k in keys)
    ]
    pid = client.run(os.getpid, workers=holders[:1])[holders[0]]
    os.kill(pid, signal.SIGKILL)
    return holders[0]


@pytest.mark.parametrize(
    "est",
    [
        milsvm.NSK(),
        milsvm.sAwMIL(kernel="linear"),
        milsvm.ALSVM(),  # the RBF kernel
        milsvm.MISVM(),  # the RBF kernel
        milsvm.MISVM(kernel="linear", n_xv=5),
        milsvm.miSVM(kernel="linear", probability=True),
        milsvm.SparseMI(init="kmeans"),
        milsvm.SparseMI(n_basis=3, init="svm"),
        milsvm.SparseMI(gamma="median"),
        milsvm.RSVM(probability=True),
    ],
)
def test_unsupported_estimators_say_what_is_supported(client, data, est):
    bags, y = data
    supported = (
        r"miSVM\(kernel='linear'\), MISVM\(kernel='linear'\), ALSVM\(kernel='linear'\), "
        r"AWSVM\(kernel='linear'\), ALPSVM\(kernel='linear'\), and SparseMI and RSVM in "
        r"direct or basis-vector mode \(n_basis; init 'random' or an array, dense or sparse; "
        r"gamma a number or 'scale'\)"
    )
    with pytest.raises(NotImplementedError, match=supported):
        dfit(est, collection(bags, 2), y, client=client)


def test_bad_inputs(client, data):
    bags, y = data
    est = small(milsvm.MISVM)
    with pytest.raises(TypeError, match="dask.bag.Bag"):
        dfit(est, bags, y, client=client)
    with pytest.raises(ValueError, match="2-D"):
        dfit(est, db.from_sequence([b.ravel() for b in bags], npartitions=2), y, client=client)
    with pytest.raises(
        ValueError, match="partition 1, bag 2 .* 2 features, the partition's first 4"
    ):
        dfit(
            est,
            db.from_delayed(
                [_delayed_list(bags[:24]), _delayed_list(bags[24:26] + [bags[26][:, :2].copy()])]
            ),
            y[:27],
            client=client,
        )
    mixed = db.from_delayed(
        [_delayed_list(bags[:24]), _delayed_list([b[:, :2].copy() for b in bags[24:]])]
    )
    with pytest.raises(
        ValueError,
        match="widths differ across partitions: partition 0 has 4 features, partition 1 2",
    ):
        dfit(est, mixed, y, client=client)
    with pytest.raises(ValueError, match="y has 47 labels for 48 bags"):
        dfit(est, collection(bags, 2), y[:-1], client=client)
    with pytest.raises(TypeError, match="dtype int64"):
        dfit(est, collection([b.astype(np.int64) for b in bags], 2), y, client=client)
    with pytest.raises(TypeError, match="dtypes differ across partitions"):
        dfit(
            est,
            db.from_delayed(
                [
                    _delayed_list(bags[:24]),
                    _delayed_list([b.astype(np.float64) for b in bags[24:]]),
                ]
            ),
            y,
            client=client,
        )
    bad = [b.copy() for b in bags]
    bad[30][1, 2] = np.nan
    with pytest.raises(ValueError, match="partition 1: .*bag 30 has a non-finite value"):
        dfit(est, collection(bad, 2), y, client=client)
    with pytest.raises(ValueError, match="no bags"):
        dfit(est, db.from_delayed([_delayed_list([])]), y[:0], client=client)


SIGINT_FIT = """
import logging, time, dask.bag as db, distributed, milsvm, numpy as np
from milsvm.distributed import fit
if __name__ == "__main__":
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster) as client:
            rng = np.random.default_rng(0)
            bags = [rng.normal(size=(20, 30)) for _ in range(200)]
            y = np.arange(200) % 2
            est = milsvm.ALSVM(kernel="linear", C=10, max_iter=100000, eps=1e-12, decay=1.0001)
            hook = lambda n, op: print("start", flush=True) if n == 30 else None
            try:
                fit(est, db.from_sequence(bags, npartitions=4), y, _round_hook=hook)
                print("finished", flush=True)
            except KeyboardInterrupt:
                print("interrupted", "model_" in est.__dict__, flush=True)
            keys = lambda dask_scheduler: [
                k for k in dask_scheduler.tasks if str(k).startswith("milsvm-round")]
            deadline = time.monotonic() + 30
            while client.run_on_scheduler(keys) and time.monotonic() < deadline:
                time.sleep(0.1)
            print("round tasks left", len(client.run_on_scheduler(keys)), flush=True)
"""


def test_sigint_interrupts_the_fit(tmp_path):
    """A real Ctrl-C (SIGINT) to the driver mid-fit: ``KeyboardInterrupt``, the estimator
    unfitted, the round's tasks cancelled (none left on the scheduler once it has processed
    the cancellation)."""
    import subprocess
    import sys

    script = tmp_path / "fit.py"
    script.write_text(SIGINT_FIT)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in proc.stdout:
            if line.startswith("start"):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "interrupted False" in out, (out, err[-2000:])
    assert "round tasks left 0" in out, out


OWN_CLIENT_FIT = """
import logging, dask.bag as db, distributed, milsvm, numpy as np
from milsvm.distributed import fit
if __name__ == "__main__":
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            try:
                distributed.default_client()
                raise SystemExit("a default client exists")
            except ValueError:
                pass  # none: the fit must use the client it is given
            rng = np.random.default_rng(0)
            bags = [rng.normal(size=(5, 3)) + (i % 2) for i in range(40)]
            y = np.arange(40) % 2
            remote = fit(milsvm.MISVM(kernel="linear"), db.from_sequence(bags, npartitions=3), y,
                         client=client)
            local = milsvm.MISVM(kernel="linear").fit(bags, y)
            print("equal", np.array_equal(remote.decision_function(bags),
                                          local.decision_function(bags)), flush=True)
"""


def test_a_client_that_is_not_the_default(tmp_path):
    """``client=`` a client that is not Dask's default, with no default client at all: the
    fit's rounds wait on that client (Dask's ``wait`` would look for a default one)."""
    import subprocess
    import sys

    script = tmp_path / "fit.py"
    script.write_text(OWN_CLIENT_FIT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert "equal True" in done.stdout, (done.stdout, done.stderr[-2000:])
