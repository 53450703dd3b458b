"""Fitted models as bytes and back, never with pickle: scikit-learn estimators through skops
(its loader refuses any type not trusted, and we trust only the few scikit-learn internals our
algorithms produce — anything else in a table is refused, not loaded), XGBoost models in
XGBoost's own JSON format, Keras networks as ``.keras`` files loaded in Keras's safe mode, ALS's
factors as numpy's ``.npz`` read with ``allow_pickle=False``."""

from __future__ import annotations

import os
import tempfile
import zipfile

from ..errors import MLSQLError
from .algs.als import SparkALS
from .algs.keras_classifier import KerasClassifier

#: types skops does not trust by default that our algorithms' models contain
TRUSTED_SKOPS_TYPES = ("sklearn.tree._tree.Tree", "mlsql_ray.ml.algs.spark_lda.SparkLDA")


def dumps(model, library: str) -> bytes:
    if library == "skops":
        import skops.io  # heavy: skops imports scikit-learn

        return skops.io.dumps(model)
    if library == "xgboost":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.json")
            model.save_model(path)
            with open(path, "rb") as f:
                return f.read()
    if library == "keras":
        return model.model_file
    if library == "npz":
        return model.to_bytes()
    raise ValueError(f"no serialiser for {library!r}")


def loads(data: bytes, library: str, empty_model, what: str):
    """The model in ``data``; ``empty_model()`` builds the estimator XGBoost loads into."""
    if library == "skops":
        import skops.io  # heavy: skops imports scikit-learn

        try:
            untrusted = [t for t in skops.io.get_untrusted_types(data=data) if t not in TRUSTED_SKOPS_TYPES]
        except Exception as exc:  # noqa: BLE001 - not a skops file at all
            raise MLSQLError(f"{what} does not hold a scikit-learn model in skops format: {exc}") from exc
        if untrusted:
            raise MLSQLError(f"{what} holds types that are not trusted, so it is not loaded: {', '.join(untrusted)}")
        return skops.io.loads(data, trusted=list(TRUSTED_SKOPS_TYPES))
    if library == "xgboost":
        model = empty_model()
        try:
            model.load_model(bytearray(data))
        except Exception as exc:  # noqa: BLE001 - XGBoostError for anything unreadable
            raise MLSQLError(f"{what} does not hold an XGBoost JSON model: {exc}") from exc
        return model
    if library == "keras":  # a .keras file, loaded in Keras's safe mode (no code from the file runs)
        return KerasClassifier.from_bytes(data)
    if library == "npz":  # arrays and JSON text only: numpy refuses object arrays without allow_pickle
        try:
            return SparkALS.from_bytes(data)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
            raise MLSQLError(f"{what} does not hold ALS factors as .npz: {exc}") from exc
    raise MLSQLError(f"{what} was saved by an unknown library {library!r}")
