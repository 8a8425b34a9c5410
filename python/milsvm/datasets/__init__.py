"""Multiple-instance data sets: loaders for the benchmark file formats and synthetic generators.

A multiple-instance (MI) data set is a list of *bags*; a bag is a matrix with one row per
instance (``n_instances x n_features``) and one label per bag. Every function of this package
returns ``(bags, y)``: ``bags`` a list of 2-D numpy arrays (float64 from the text formats;
the file's dtype from the embedding readers, e.g. float32) or of ``scipy.sparse.csr_matrix``
(sparse data), ``y`` a 1-D numpy array with one label per bag (integers: ``0``/``1`` for
binary sets, ``0..K-1`` for multi-class sets; a label CSV may also give text labels).

Loaders
-------
- :func:`load_mill`: the MILL text format (``instance_name,bag_name,label,features...``, dense or
  sparse ``index:value`` features) of MUSK1/2, Elephant, TST1/2 and COREL.
- :func:`load_musk_uci`: the original UCI ``clean1.data`` / ``clean2.data`` files.
- :func:`load_andrews_mat`: S. Andrews' MATLAB files (``features``, ``labels``, ``bag_ids``).
- :func:`load_mil_csv`: the CSV layout of the ``mil`` Python package (``label,bag_id,features...``).
- :func:`load_musk1`: the copy of MUSK1 bundled with the package.

Readers of the layouts of embedding pipelines (one bag per file, or one table), which keep
float32 features float32 (no float64 copy; the dtype rule is in :mod:`.labels`), with labels
from a CSV (:func:`read_labels`) or a dict:

- :func:`load_npy_folder`: a folder of per-bag ``.npy`` files, memory-mapped.
- :func:`load_h5_folder`: a folder of per-bag HDF5 files in CLAM's layout (``features``, N x D;
  needs ``h5py``).
- :func:`load_parquet`: a Parquet table with bag-id, label and feature columns (needs
  ``pyarrow``).
- :func:`load_slide_folder`: a folder of slide bags read whole (:class:`SlideData`): the bags
  with their patients (the label CSV's ``case_id``), patch coordinates
  (:class:`PatchCoords`) and files; a case as one bag with ``bag_by``.

Every loader takes ``return_bag_names=True`` to also return the bag names (or ids) as a list
of ``str``, in the order of the bags: ``bags, y, names = load_mill(path, return_bag_names=True)``.

Generators
----------
- :func:`make_center_ring_bags`: binary centre/ring data of Fu et al. (2013), Fig. 2(a).
- :func:`make_four_gaussians_bags`: 3-class data of Fu et al. (2013), Fig. 2(b).
- :func:`make_annealing_toy`: the 2-D toy of Gehler & Chapelle (2007), section 5.
- :func:`make_embedding_bags`: pathology-shaped bags of float32 embeddings (lognormal bag
  sizes, tissue clusters, a witness rate).
- :func:`make_slide_folder`: a synthetic folder of slides in CLAM's layout (HDF5 features and
  coords, a ``case_id,slide_id,label`` CSV, several slides per case, tumour patches clustered
  in space, a per-case offset).

The text readers depend on numpy and scipy only (scikit-learn is imported lazily by the
generators, for ``check_random_state``); ``h5py`` and ``pyarrow`` are imported by their readers
when called (extras ``milsvm[hdf5]``, ``milsvm[parquet]``).

Layout
------
``_text`` (line reading and number parsing shared by the text readers), ``mill``, ``musk``,
``mat``, ``csv``, ``folder`` (``.npy`` and HDF5 folders), ``parquet`` (one module per file
format), ``labels`` (label CSVs, the pairing of files and labels, the dtype rule) and
``generators``; the public names are re-exported here, so ``milsvm.datasets.load_mill`` and the like
are the interface.
"""

from __future__ import annotations

from .coords import PatchCoords  # noqa: F401 (the class of the coordinates the readers return)
from .csv import load_mil_csv
from .folder import load_h5_folder, load_npy_folder
from .generators import (
    make_annealing_toy,
    make_center_ring_bags,
    make_embedding_bags,
    make_four_gaussians_bags,
)
from .labels import label_columns, read_labels
from .mat import load_andrews_mat
from .mill import load_mill
from .musk import load_musk1, load_musk_uci
from .parquet import load_parquet
from .slides import SlideData, SlideFolder, load_slide_folder, make_slide_folder  # noqa: F401

__all__ = [
    "load_mill",
    "load_musk_uci",
    "load_andrews_mat",
    "load_mil_csv",
    "load_musk1",
    "load_npy_folder",
    "load_h5_folder",
    "load_parquet",
    "read_labels",
    "label_columns",
    "load_slide_folder",
    "make_slide_folder",
    "make_center_ring_bags",
    "make_four_gaussians_bags",
    "make_annealing_toy",
    "make_embedding_bags",
]
