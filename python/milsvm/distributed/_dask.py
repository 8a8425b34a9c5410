"""Dask, an optional dependency of :mod:`milsvm.distributed`, imported when a function needs
it."""

_INSTALL_HINT = (
    "milsvm.distributed needs dask (dask[bag]) and distributed; install them with "
    "`pip install milsvm[dask]`"
)


def import_dask():
    """Import dask and dask.bag, or raise an ImportError saying how to install them."""
    try:
        import dask
        import dask.bag as db
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return dask, db
