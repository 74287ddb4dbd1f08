"""arbor's SQL functions inside datafusion-python, through the DataFusion FFI."""

from __future__ import annotations

from arbor import _arbor


def register(ctx) -> None:
    """Registers arbor's SQL functions on a datafusion-python ``SessionContext``.

    ``train_forest`` (an aggregate, so ``GROUP BY`` trains a model per group),
    ``predict_forest``, ``predict_forest_proba``, ``forest_info`` and
    ``forest_importance`` then work in ``ctx.sql(...)`` exactly as in
    ``arbor sql``. Each call makes a new model cache, so models decoded for one
    context never answer for another's.

    The FFI only promises compatibility within one DataFusion major version:
    a ``datafusion`` package of another major version is refused with an
    ``ImportError`` that says which one to install.
    """
    import datafusion

    major = _arbor.DATAFUSION_MAJOR
    installed = datafusion.__version__
    if installed.split(".")[0] != str(major):
        msg = (
            f"arbor's SQL functions are built for DataFusion {major}, but datafusion "
            f"{installed} is installed: pip install 'datafusion>={major},<{major + 1}'"
        )
        raise ImportError(msg)
    scalars, aggregates = _arbor.sql_functions()
    for function in scalars:
        ctx.register_udf(datafusion.udf(function))
    for function in aggregates:
        ctx.register_udaf(datafusion.udaf(function))
