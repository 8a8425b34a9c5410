"""Generators of the papers' synthetic MI data sets, with their argument checks.

- :func:`make_center_ring_bags`: binary centre/ring data of Fu et al. (2013), Fig. 2(a).
- :func:`make_four_gaussians_bags`: 3-class data of Fu et al. (2013), Fig. 2(b).
- :func:`make_annealing_toy`: the 2-D toy of Gehler & Chapelle (2007), section 5.
- :func:`make_embedding_bags`: pathology-shaped bags of float32 embeddings (not from a paper).

scikit-learn is imported lazily, for ``check_random_state``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._docs import splice

__all__ = [
    "make_center_ring_bags",
    "make_four_gaussians_bags",
    "make_annealing_toy",
    "make_embedding_bags",
]


# --------------------------------------------------------------------------------------------
# Generator helpers
# --------------------------------------------------------------------------------------------


#: The descriptions the 2-D generators share (numpydoc), spliced into their docstrings where a
#: line ``<name>`` stands.
_SHARED_DOCS = {
    "bag_size": """bag_size : int or (int, int), default=(5, 10)
    Bag size, or the inclusive range it is drawn from uniformly; sizes >= 1.""",
    "random_state_to_bags": """random_state : int, RandomState, Generator or None, default=None
    Seed or random generator (see :func:`sklearn.utils.check_random_state`; a
    ``numpy.random.Generator`` is used as given).
return_instance_labels : bool, default=False
    Also return the instance labels.

Returns
-------
bags : list of ndarray of shape (n_instances_i, 2)""",
}


def _check_random_state(random_state):
    """Return a RandomState or Generator for ``random_state`` (None, int or either object)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    from sklearn.utils import check_random_state

    return check_random_state(random_state)


def _integers(rng, low, high, size=None):
    """Random integers in ``[low, high)`` from a RandomState or a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng.integers(low, high, size=size)
    return rng.randint(low, high, size=size)


def _check_int(name, value, minimum):
    """Check that ``value`` is an integer >= ``minimum`` and return it as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_real(name, value, low=None, high=None, low_open=True, high_open=False):
    """Check that ``value`` is a finite real number in the given interval; return a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    if high is not None and (value > high or (high_open and value == high)):
        bound = f"< {high}" if high_open else f"<= {high}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return value


def _check_bag_size(bag_size):
    """Validate ``bag_size`` (an int or an inclusive ``(min, max)`` pair) -> ``(lo, hi)``."""
    if isinstance(bag_size, numbers.Integral) and not isinstance(bag_size, bool):
        lo = hi = bag_size
    else:
        try:
            lo, hi = bag_size
        except (TypeError, ValueError):
            raise ValueError(
                f"bag_size must be an integer or a (min, max) pair of integers, got {bag_size!r}"
            ) from None
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(
                    f"bag_size must be an integer or a (min, max) pair of integers, got "
                    f"{bag_size!r}"
                )
    lo, hi = int(lo), int(hi)
    if lo < 1:
        raise ValueError(f"bag_size: bags need at least 1 instance, got {bag_size!r}")
    if hi < lo:
        raise ValueError(f"bag_size: (min, max) needs min <= max, got {bag_size!r}")
    return lo, hi


def _balanced_labels(n_bags, n_classes, rng):
    """Labels ``0..n_classes-1`` in random order, class counts differing by at most one.

    When ``n_bags`` is not a multiple of ``n_classes`` the lower classes get the extra bags
    (for binary data: ``n_bags // 2`` positive bags).
    """
    counts = [n_bags // n_classes + (c < n_bags % n_classes) for c in range(n_classes)]
    y = np.repeat(np.arange(n_classes, dtype=np.int64), counts)
    return y[rng.permutation(n_bags)]


def _n_witnesses(rng, n):
    """Number of 'positive' instances of a bag of ``n``: uniform on ``1..max(1, n // 2)``."""
    return int(_integers(rng, 1, max(1, n // 2) + 1))


def _finish(bags, y, instance_labels, return_instance_labels):
    if return_instance_labels:
        return bags, y, instance_labels
    return bags, y


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------


@splice(_SHARED_DOCS)
def make_center_ring_bags(
    n_bags=100,
    bag_size=(5, 10),
    radius=2.0,
    noise=0.15,
    random_state=None,
    return_instance_labels=False,
):
    """Generate the binary 2-D "centre and ring" MI data of Fu et al. (2013).

    Fu, Lu, Ting and Zhang (IEEE TNNLS 24(9), 2013, section V-A, Fig. 2(a); Fig. 1(a) of the
    ECML 2011 version) describe it as: "each positive bag contains at least one instance in
    the center, whereas each negative bag contains only instances on the surrounding circle".
    The paper gives no sizes or spreads; this generator fills them in as follows:

    - half the bags are positive (``n_bags // 2``; the extra bag of an odd ``n_bags`` is
      negative), in random order;
    - the size of each bag is uniform on ``bag_size[0]..bag_size[1]``;
    - a ring instance is ``radius * (cos t, sin t) + e`` with ``t`` uniform on ``[0, 2 pi)``
      and ``e ~ N(0, noise^2 I)``;
    - a centre instance is ``e ~ N(0, noise^2 I)``;
    - a negative bag has ring instances only; a positive bag of ``n`` instances has ``k``
      centre instances, ``k`` uniform on ``1..max(1, n // 2)`` ("at least one", and at most
      half the bag so that positive bags are still mostly ring), the rest on the ring; the
      rows of a bag are shuffled.

    A single expansion vector at the origin separates the classes, as in the paper.

    Parameters
    ----------
    n_bags : int, default=100
        Number of bags, >= 2.
    <bag_size>
    radius : float, default=2.0
        Radius of the ring, > 0.
    noise : float, default=0.15
        Standard deviation of the Gaussian noise of every coordinate, >= 0. The classes are
        separated as long as ``noise`` is well below ``radius / 2``.
    <random_state_to_bags>
        The bags, float64.
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 1 for centre instances, 0 for ring instances.

    Raises
    ------
    ValueError
        If an argument is invalid (``n_bags < 2``, a bad ``bag_size``, ``radius <= 0``,
        ``noise < 0``, non-finite values).

    Examples
    --------
    >>> bags, y = make_center_ring_bags(n_bags=10, random_state=0)
    >>> len(bags), int(y.sum()), bags[0].shape[1]
    (10, 5, 2)
    """
    n_bags = _check_int("n_bags", n_bags, 2)
    lo, hi = _check_bag_size(bag_size)
    radius = _check_real("radius", radius, low=0.0)
    noise = _check_real("noise", noise, low=0.0, low_open=False)
    rng = _check_random_state(random_state)

    y = _balanced_labels(n_bags, 2, rng)
    bags = []
    instance_labels = []
    for label in y:
        n = int(_integers(rng, lo, hi + 1))
        k = _n_witnesses(rng, n) if label == 1 else 0
        centre = rng.normal(0.0, noise, size=(k, 2))
        theta = rng.uniform(0.0, 2.0 * np.pi, size=n - k)
        ring = radius * np.column_stack((np.cos(theta), np.sin(theta)))
        ring += rng.normal(0.0, noise, size=(n - k, 2))
        X = np.vstack((centre, ring))
        z = np.concatenate((np.ones(k, dtype=np.int64), np.zeros(n - k, dtype=np.int64)))
        p = rng.permutation(n)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)


# Means of the four Gaussians of make_four_gaussians_bags (mu_1 .. mu_4 of the paper).
_FOUR_GAUSSIANS_MEANS = np.array([[-2.0, 2.0], [2.0, 2.0], [2.0, -2.0], [-2.0, -2.0]])
_FOUR_GAUSSIANS_MEANS.setflags(write=False)
_FOUR_GAUSSIANS_SIGMA = 0.25


@splice(_SHARED_DOCS)
def make_four_gaussians_bags(
    n_bags=150, bag_size=(5, 10), random_state=None, return_instance_labels=False
):
    """Generate the 3-class 2-D MI data of Fu et al. (2013), Fig. 2(b).

    Instances come from four Gaussians ``N(mu_i, sigma^2 I)`` with ``mu_1 = (-2, 2)``,
    ``mu_2 = (2, 2)``, ``mu_3 = (2, -2)``, ``mu_4 = (-2, -2)`` and ``sigma = 0.25``. The paper
    (TNNLS 2013, section V-A) says: "Bags from class 3 contain only instances randomly drawn
    from N(mu_2, sigma^2) and N(mu_4, sigma^2), whereas each bag from class 1 contains at least
    one instance drawn from N(mu_1, sigma^2) and each bag from class 2 contains at least one
    instance drawn from N(mu_3, sigma^2)", and that two expansion vectors at ``mu_1`` and
    ``mu_3`` suffice to discriminate. So the two Gaussians ``mu_2`` and ``mu_4`` (the
    anti-diagonal) are the shared *background*, and ``mu_1`` / ``mu_3`` are the concepts of
    classes 1 and 2. Choices made where the paper is silent:

    - paper classes 1, 2, 3 are labels ``0, 1, 2``; the classes are balanced (counts differ
      by at most one) and in random order;
    - the size of each bag is uniform on ``bag_size[0]..bag_size[1]``;
    - a bag of class 0 (resp. 1) of ``n`` instances has ``k`` instances from ``mu_1`` (resp.
      ``mu_3``), ``k`` uniform on ``1..max(1, n // 2)``; the other instances, and all the
      instances of class-2 bags, are background: each drawn from ``mu_2`` or ``mu_4`` with
      probability 1/2. A bag never mixes the two concepts (the paper's class 3 would otherwise
      not be defined by the *absence* of both), and the rows of a bag are shuffled.

    Parameters
    ----------
    n_bags : int, default=150
        Number of bags, >= 3.
    <bag_size>
    <random_state_to_bags>
        The bags, float64.
    y : ndarray of shape (n_bags,), dtype int64
        The class of every bag, in {0, 1, 2}.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 0 for instances from ``mu_1``, 1 for instances
        from ``mu_3``, 2 for background instances (``mu_2`` or ``mu_4``). A bag's label is the
        non-background instance label it contains, or 2 if it has none.

    Raises
    ------
    ValueError
        If an argument is invalid (``n_bags < 3``, a bad ``bag_size``).

    Examples
    --------
    >>> bags, y = make_four_gaussians_bags(n_bags=9, random_state=0)
    >>> sorted(np.bincount(y).tolist())
    [3, 3, 3]
    """
    n_bags = _check_int("n_bags", n_bags, 3)
    lo, hi = _check_bag_size(bag_size)
    rng = _check_random_state(random_state)

    concept = {0: 0, 1: 2}  # class -> index of its Gaussian in _FOUR_GAUSSIANS_MEANS
    y = _balanced_labels(n_bags, 3, rng)
    bags = []
    instance_labels = []
    for label in y:
        n = int(_integers(rng, lo, hi + 1))
        k = _n_witnesses(rng, n) if label != 2 else 0
        component = np.empty(n, dtype=np.int64)
        z = np.full(n, 2, dtype=np.int64)
        if k:
            component[:k] = concept[int(label)]
            z[:k] = label
        component[k:] = 1 + 2 * _integers(rng, 0, 2, size=n - k)  # mu_2 or mu_4
        X = _FOUR_GAUSSIANS_MEANS[component] + rng.normal(0.0, _FOUR_GAUSSIANS_SIGMA, size=(n, 2))
        p = rng.permutation(n)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)


# Half-width of the square [-a, a]^2 of make_annealing_toy.
_ANNEALING_TOY_HALF_WIDTH = 3.0
# Radius of the positive disc (centred at the origin) of make_annealing_toy.
_ANNEALING_TOY_RADIUS = 1.5


def _sample_disc(rng, n, radius):
    """``n`` points uniform in the disc of the given radius around the origin."""
    r = radius * np.sqrt(rng.uniform(0.0, 1.0, size=n))
    t = rng.uniform(0.0, 2.0 * np.pi, size=n)
    return np.column_stack((r * np.cos(t), r * np.sin(t)))


def _sample_square_minus_disc(rng, n, half_width, radius):
    """``n`` points uniform in the square ``[-a, a]^2`` outside the disc (rejection)."""
    out = np.empty((0, 2))
    while out.shape[0] < n:
        m = 2 * (n - out.shape[0]) + 4
        cand = rng.uniform(-half_width, half_width, size=(m, 2))
        cand = cand[np.einsum("ij,ij->i", cand, cand) > radius * radius]
        out = np.vstack((out, cand))
    return out[:n]


@splice(_SHARED_DOCS)
def make_annealing_toy(
    fraction_positive=0.5, n_bags=100, random_state=None, return_instance_labels=False
):
    """Generate the 2-D toy MI data of Gehler & Chapelle (AISTATS 2007), section 5.

    The paper: "The label Y_i and the size m_i are uniformly sampled from {-1, 1} and
    {1, 2, ..., 10}. For a negative labeled bag we sample m_i patterns uniformly from the black
    region (negative class) [...]. A positive labeled bag consists of [f m_i] points sampled
    uniformly from the white region (positive class) and the remaining ``|(1 - f) m_i|`` points
    from the negative class." They vary ``f = 0.1, ..., 1`` and use an RBF kernel of width 1.

    The two regions are only shown in the paper's Figure 1, which the text does not describe;
    this generator uses, in the square ``[-3, 3]^2``, the disc of radius 1.5 around the origin
    as the positive (white) region and the rest of the square as the negative (black) region
    (about 20% / 80% of the area): a non-linear boundary on the scale of the RBF width 1.
    Other choices:

    - the bag size ``m_i`` is uniform on ``1..10``, as in the paper;
    - a positive bag has ``ceil(f m_i)`` positive instances (at least 1; the product is
      rounded down first when it is within 1e-9 of an integer, so ``f = 0.3, m = 10`` gives 3)
      and ``m_i - ceil(f m_i)`` negative ones, which sum to ``m_i`` as the paper's brackets
      must; the rows of a bag are shuffled;
    - instead of a fair coin per bag, exactly ``n_bags // 2`` bags are positive, in random
      order (the expected proportion of the paper, without its sampling variance).

    Parameters
    ----------
    fraction_positive : float, default=0.5
        Fraction ``f`` of positive instances in a positive bag, in (0, 1].
    n_bags : int, default=100
        Number of bags, >= 2 (the paper uses 30 training and 100 test bags).
    <random_state_to_bags>
        The bags, float64, 1 to 10 instances each.
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``: 1 for instances of the positive region (inside the
        disc), 0 for the others.

    Raises
    ------
    ValueError
        If ``fraction_positive`` is not in (0, 1] or ``n_bags < 2``.

    Examples
    --------
    >>> bags, y = make_annealing_toy(0.2, n_bags=30, random_state=0)
    >>> len(bags), int(y.sum())
    (30, 15)
    """
    fraction_positive = _check_real(
        "fraction_positive", fraction_positive, low=0.0, high=1.0, low_open=True
    )
    n_bags = _check_int("n_bags", n_bags, 2)
    rng = _check_random_state(random_state)

    a, r = _ANNEALING_TOY_HALF_WIDTH, _ANNEALING_TOY_RADIUS
    y = _balanced_labels(n_bags, 2, rng)
    bags = []
    instance_labels = []
    for label in y:
        m = int(_integers(rng, 1, 11))
        if label == 1:
            k = max(1, min(m, math.ceil(fraction_positive * m - 1e-9)))
        else:
            k = 0
        X = np.vstack((_sample_disc(rng, k, r), _sample_square_minus_disc(rng, m - k, a, r)))
        z = np.concatenate((np.ones(k, dtype=np.int64), np.zeros(m - k, dtype=np.int64)))
        p = rng.permutation(m)
        bags.append(np.ascontiguousarray(X[p], dtype=np.float64))
        instance_labels.append(z[p])
    return _finish(bags, y, instance_labels, return_instance_labels)


def make_embedding_bags(
    n_bags=100,
    mean_bag_size=1000,
    n_features=512,
    *,
    witness_rate=0.05,
    separation=6.0,
    bag_size_sigma=0.5,
    n_tissue_types=8,
    positive_fraction=0.5,
    dtype=np.float32,
    random_state=None,
    return_instance_labels=False,
):
    """Generate bags shaped like whole-slide images as patch embeddings (pathology MIL).

    A bag is a slide and an instance a patch embedding, in ``n_features`` dimensions:

    - **Bag sizes** are lognormal around ``mean_bag_size``: ``m = max(1, round(exp(z)))`` with
      ``z ~ N(ln(mean_bag_size) - bag_size_sigma**2 / 2, bag_size_sigma**2)``, so that the
      expected size is ``mean_bag_size`` (about 0.6x to 1.6x it within one sigma).
    - **Background patches** (every instance of a negative bag, the others of a positive one)
      come from ``n_tissue_types`` clusters: a slide draws its tissue proportions from a flat
      Dirichlet, each patch a tissue type from them, and the patch is that type's centre (a
      standard Gaussian vector) plus standard Gaussian noise in every dimension.
    - **Witnesses** (the tumour patches of a positive slide): ``max(1, Binomial(m,
      witness_rate))`` patches of a positive bag, which are background patches moved by
      ``separation`` noise standard deviations along one fixed random unit direction (the
      signal lives in one direction among ``n_features``; along it a witness is
      ``separation`` standard deviations from the background, whose spread along it is
      sqrt(2) from noise and centre together).

    Exactly ``round(positive_fraction * n_bags)`` bags are positive, in random order. The tissue
    centres and the witness direction are drawn from ``random_state`` too, so a test set must
    come from the same call (draw training and test bags together and split them): two calls
    with different seeds are two different problems. The data are drawn in ``dtype`` directly (no
    float64 intermediate for float32), bag by bag, so the peak memory is the data's own size.

    Parameters
    ----------
    n_bags : int, default=100
        Number of bags (slides), >= 2.
    mean_bag_size : int, default=1000
        Expected number of instances per bag, >= 1.
    n_features : int, default=512
        Dimension of the embeddings, >= 1.
    witness_rate : float, default=0.05
        Expected fraction of witnesses in a positive bag, in (0, 1].
    separation : float, default=6.0
        How far a witness is moved from the background, in noise standard deviations, > 0.
        With the defaults, 100 training bags of 200 instances give a linear mi-SVM / MI-SVM a
        test AUC of about 0.95-1.0 (C = 1); at 3 it is near chance for them (the tissue
        mixture of a bag, which differs between bags, is the stronger signal).
    bag_size_sigma : float, default=0.5
        Standard deviation of the log bag size, >= 0 (0: every bag has ``mean_bag_size``).
    n_tissue_types : int, default=8
        Number of background clusters, >= 1.
    positive_fraction : float, default=0.5
        Fraction of positive bags, in (0, 1); at least one bag of each class.
    dtype : {numpy.float32, numpy.float64}, default=numpy.float32
        The dtype of the bags.
    random_state : int, RandomState, Generator or None, default=None
        Seed or random generator; a RandomState seeds a new ``numpy.random.Generator`` (the
        only kind that draws float32 directly).
    return_instance_labels : bool, default=False
        Also return the instance labels (1 for witnesses).

    Returns
    -------
    bags : list of ndarray of shape (n_instances_i, n_features)
    y : ndarray of shape (n_bags,), dtype int64
        1 for positive bags, 0 for negative ones.
    instance_labels : list of ndarray of shape (n_instances_i,), dtype int64
        Only if ``return_instance_labels``.

    Examples
    --------
    >>> bags, y = make_embedding_bags(10, mean_bag_size=50, n_features=16, random_state=0)
    >>> len(bags), int(y.sum()), bags[0].dtype
    (10, 5, dtype('float32'))
    """
    n_bags = _check_int("n_bags", n_bags, 2)
    mean_bag_size = _check_int("mean_bag_size", mean_bag_size, 1)
    n_features = _check_int("n_features", n_features, 1)
    n_tissue_types = _check_int("n_tissue_types", n_tissue_types, 1)
    witness_rate = _check_real("witness_rate", witness_rate, low=0.0, high=1.0)
    separation = _check_real("separation", separation, low=0.0)
    bag_size_sigma = _check_real("bag_size_sigma", bag_size_sigma, low=0.0, low_open=False)
    positive_fraction = _check_real(
        "positive_fraction", positive_fraction, low=0.0, high=1.0, high_open=True
    )
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    n_positive = int(round(positive_fraction * n_bags))
    if not 1 <= n_positive <= n_bags - 1:
        raise ValueError(
            f"positive_fraction={positive_fraction} of {n_bags} bags leaves a class without bags"
        )
    rng = (
        random_state
        if isinstance(random_state, np.random.Generator)
        else np.random.default_rng(
            _check_random_state(random_state).randint(0, 2**31 - 1)
            if not isinstance(random_state, (int, np.integer))
            else random_state
        )
    )
    y = np.zeros(n_bags, dtype=np.int64)
    y[rng.permutation(n_bags)[:n_positive]] = 1
    centres = rng.standard_normal((n_tissue_types, n_features), dtype=dtype)
    direction = rng.standard_normal(n_features)
    direction = (direction * (separation / np.linalg.norm(direction))).astype(dtype)
    mu = math.log(mean_bag_size) - bag_size_sigma**2 / 2
    bags, instance_labels = [], []
    for label in y:
        m = (
            max(1, int(round(math.exp(rng.normal(mu, bag_size_sigma)))))
            if bag_size_sigma > 0
            else mean_bag_size
        )
        types = rng.choice(n_tissue_types, size=m, p=rng.dirichlet(np.ones(n_tissue_types)))
        bag = rng.standard_normal((m, n_features), dtype=dtype)
        bag += centres[types]
        witnesses = np.zeros(m, dtype=np.int64)
        if label == 1:
            k = max(1, int(rng.binomial(m, witness_rate)))
            chosen = rng.choice(m, size=k, replace=False)
            bag[chosen] += direction
            witnesses[chosen] = 1
        bags.append(bag)
        instance_labels.append(witnesses)
    return (bags, y, instance_labels) if return_instance_labels else (bags, y)
