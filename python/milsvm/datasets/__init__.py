"""Multiple-instance data sets: loaders for the benchmark file formats and synthetic generators.

A multiple-instance (MI) data set is a list of *bags*; a bag is a matrix with one row per
instance (``n_instances x n_features``) and one label per bag. Every function of this package
returns ``(bags, y)``: ``bags`` a list of 2-D ``float64`` numpy arrays (dense data) or of
``scipy.sparse.csr_matrix`` (sparse data), ``y`` a 1-D integer numpy array with one label per
bag (``0``/``1`` for binary sets, ``0..K-1`` for multi-class sets).

Loaders
-------
- :func:`load_mill`: the MILL text format (``instance_name,bag_name,label,features...``, dense or
  sparse ``index:value`` features) of MUSK1/2, Elephant, TST1/2 and COREL.
- :func:`load_musk_uci`: the original UCI ``clean1.data`` / ``clean2.data`` files.
- :func:`load_andrews_mat`: S. Andrews' MATLAB files (``features``, ``labels``, ``bag_ids``).
- :func:`load_mil_csv`: the CSV layout of the ``mil`` Python package (``label,bag_id,features...``).
- :func:`load_musk1`: the copy of MUSK1 bundled with the package.

Every loader takes ``return_bag_names=True`` to also return the bag names (or ids) as a list
of ``str``, in the order of the bags: ``bags, y, names = load_mill(path, return_bag_names=True)``.

Generators
----------
- :func:`make_center_ring_bags`: binary centre/ring data of Fu et al. (2013), Fig. 2(a).
- :func:`make_four_gaussians_bags`: 3-class data of Fu et al. (2013), Fig. 2(b).
- :func:`make_annealing_toy`: the 2-D toy of Gehler & Chapelle (2007), section 5.

The package depends on numpy and scipy only (scikit-learn is imported lazily by the generators,
for ``check_random_state``).

Layout
------
``_text`` (line reading and number parsing shared by the text readers), ``mill``, ``musk``,
``mat``, ``csv`` (one module per file format) and ``generators``; the public names are
re-exported here, so ``milsvm.datasets.load_mill`` and the like are the interface.
"""

from __future__ import annotations

from .csv import load_mil_csv
from .generators import make_annealing_toy, make_center_ring_bags, make_four_gaussians_bags
from .mat import load_andrews_mat
from .mill import load_mill
from .musk import load_musk1, load_musk_uci

__all__ = [
    "load_mill",
    "load_musk_uci",
    "load_andrews_mat",
    "load_mil_csv",
    "load_musk1",
    "make_center_ring_bags",
    "make_four_gaussians_bags",
    "make_annealing_toy",
]
