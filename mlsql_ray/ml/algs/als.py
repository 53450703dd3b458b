"""ALSInPlace → alternating least squares written here in numpy, as Spark's ``ml.recommendation.ALS``
defines it: no maintained Python library does Spark's explicit-feedback ALS (``implicit`` solves
only implicit feedback, scikit-surprise and cornac factorise by SGD, pyspark needs a JVM). Each
half-step solves, per user (item), the ridge problem over its ratings with regParam scaled by its
number of ratings (Spark's "ALS-WR"); ``implicitPrefs`` is Hu, Koren and Volinsky's confidence
form with ``alpha``, as Spark; ``nonnegative`` solves each problem by NNLS. Factors start as
seeded random unit vectors (of non-negative entries, as Spark's comment describes), items are
solved first. No batch or API predict, as in Byzer: ``userRec``/``itemRec`` write the top-N
recommendations to ``TARGET/data/userRec`` and ``TARGET/data/itemRec`` as Parquet."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa

from ..algorithm import RECOMMENDER, Algorithm, spark_param, to_int
from ...options import boolean
from .common import SEED

#: rows whose outer products are summed at once (bounds the memory of one half-step)
_CHUNK_ROWS = 65536
#: scores held at once when ranking recommendations
_CHUNK_SCORES = 1 << 22
_INT_RANGE = (-(2 ** 31), 2 ** 31 - 1)


def _at_least(low: float, convert):
    def check(text: str):
        value = convert(text)
        if value < low:
            raise ValueError(f"expected at least {low}, not {text!r}")
        return value
    return check


def _cold_start(text: str) -> str:
    if text not in ("nan", "drop"):
        raise ValueError("expected nan or drop")
    return text


class SparkALS:
    """scikit-learn's estimator contract on rows of (user id, item id) with ratings as ``y``."""

    def __init__(self, rank=10, max_iter=10, reg_param=0.1, implicit_prefs=False, alpha=1.0, nonnegative=False,
                 cold_start_strategy="nan", user_col="user", item_col="item", rating_col="rating", random_state=0):
        self.rank, self.max_iter, self.reg_param = rank, max_iter, reg_param
        self.implicit_prefs, self.alpha, self.nonnegative = implicit_prefs, alpha, nonnegative
        self.cold_start_strategy, self.random_state = cold_start_strategy, random_state
        self.user_col, self.item_col, self.rating_col = user_col, item_col, rating_col
        self.user_ids = self.item_ids = self.user_factors = self.item_factors = None

    def _params(self) -> dict:
        return {name: getattr(self, name) for name in ("rank", "max_iter", "reg_param", "implicit_prefs", "alpha",
                                                       "nonnegative", "cold_start_strategy", "user_col", "item_col",
                                                       "rating_col", "random_state")}

    def fit(self, x: np.ndarray, y: np.ndarray) -> "SparkALS":
        self.user_ids, users = np.unique(x[:, 0].astype(np.int64), return_inverse=True)
        self.item_ids, items = np.unique(x[:, 1].astype(np.int64), return_inverse=True)
        ratings = np.asarray(y, dtype=np.float64)
        rng = np.random.default_rng(self.random_state)
        self.user_factors = _unit_rows(rng, len(self.user_ids), self.rank)
        self.item_factors = _unit_rows(rng, len(self.item_ids), self.rank)
        by_user, by_item = np.argsort(users, kind="stable"), np.argsort(items, kind="stable")
        for _ in range(self.max_iter):
            self.item_factors = self._solve(items[by_item], self.user_factors, users[by_item], ratings[by_item],
                                            len(self.item_ids))
            self.user_factors = self._solve(users[by_user], self.item_factors, items[by_user], ratings[by_user],
                                            len(self.user_ids))
        return self

    def _solve(self, owners: np.ndarray, sources: np.ndarray, source_index: np.ndarray, ratings: np.ndarray,
               n_owners: int) -> np.ndarray:
        """New factors for ``n_owners`` from the ``sources`` factors of the rows they rated."""
        k = self.rank
        gram, rhs = np.zeros((n_owners, k, k)), np.zeros((n_owners, k))
        if self.implicit_prefs:  # confidence 1 + alpha·|r| on preference r > 0, YᵀY for the unrated
            weights = self.alpha * np.abs(ratings)
            targets = np.where(ratings > 0, 1.0 + weights, 0.0)
            counted = ratings > 0
            gram += sources.T @ sources
        else:
            weights, targets, counted = np.ones_like(ratings), ratings, np.ones(len(ratings), bool)
        for start in range(0, len(owners), _CHUNK_ROWS):  # rows sorted by owner: sums over runs
            part = slice(start, start + _CHUNK_ROWS)
            f = sources[source_index[part]]
            present, runs = np.unique(owners[part], return_index=True)
            gram[present] += np.add.reduceat(f[:, :, None] * f[:, None, :] * weights[part, None, None], runs)
            rhs[present] += np.add.reduceat(f * targets[part, None], runs)
        regularised = gram + (self.reg_param * np.bincount(owners[counted], minlength=n_owners))[:, None, None] * np.eye(k)
        if self.nonnegative:
            return np.stack([_nnls(a, b) for a, b in zip(regularised, rhs)])
        return np.linalg.solve(regularised, rhs[..., None])[..., 0]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Ratings of (user, item) rows; NaN where the user or the item was not in training."""
        users, known_users = _positions(self.user_ids, x[:, 0])
        items, known_items = _positions(self.item_ids, x[:, 1])
        scores = np.einsum("ij,ij->i", self.user_factors[users], self.item_factors[items])
        return np.where(known_users & known_items, scores, np.nan)

    def rated(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ratings, predictions) as ``coldStartStrategy`` leaves them: ``drop`` leaves out rows of
        unknown users or items, ``nan`` keeps them (their NaN makes Spark's rmse NaN)."""
        predicted = self.predict(x)
        kept = ~np.isnan(predicted) if self.cold_start_strategy == "drop" else np.ones(len(predicted), bool)
        return np.asarray(y, dtype=np.float64)[kept], predicted[kept]

    def recommend(self, n: int, for_users: bool = True) -> pa.Table:
        """Spark's recommendForAllUsers (or ...Items): per user the top ``n`` items by predicted
        rating, highest first (ties: smaller id first), as ``user, recommendations: [{item, rating}]``."""
        ids, factors, other_ids, other_factors = (self.user_ids, self.user_factors, self.item_ids, self.item_factors)
        own_col, other_col = self.user_col, self.item_col
        if not for_users:
            ids, factors, other_ids, other_factors = other_ids, other_factors, ids, factors
            own_col, other_col = other_col, own_col
        top = min(n, len(other_ids))
        picked, ratings = [], []
        step = max(1, _CHUNK_SCORES // max(len(other_ids), 1))
        for start in range(0, len(ids), step):
            scores = factors[start:start + step] @ other_factors.T
            order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
            picked.append(order)
            ratings.append(np.take_along_axis(scores, order, axis=1))
        picked = np.concatenate(picked) if picked else np.empty((0, top), np.int64)
        ratings = np.concatenate(ratings) if ratings else np.empty((0, top))
        entries = pa.StructArray.from_arrays([pa.array(other_ids[picked].reshape(-1).astype(np.int32)),
                                              pa.array(ratings.reshape(-1).astype(np.float32))], names=[other_col, "rating"])
        offsets = pa.array(np.arange(len(ids) + 1) * top, pa.int32())
        return pa.table({own_col: pa.array(ids.astype(np.int32)),
                         "recommendations": pa.ListArray.from_arrays(offsets, entries)})

    def to_bytes(self) -> bytes:
        """numpy's ``.npz`` of the ids and factors, the parameters as JSON text: no pickle."""
        out = io.BytesIO()
        np.savez(out, user_ids=self.user_ids, item_ids=self.item_ids, user_factors=self.user_factors,
                 item_factors=self.item_factors, params=np.frombuffer(json.dumps(self._params()).encode(), np.uint8))
        return out.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "SparkALS":
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            model = cls(**json.loads(arrays["params"].tobytes().decode()))
            model.user_ids, model.item_ids = arrays["user_ids"], arrays["item_ids"]
            model.user_factors, model.item_factors = arrays["user_factors"], arrays["item_factors"]
        return model


def _unit_rows(rng: np.random.Generator, rows: int, rank: int) -> np.ndarray:
    values = np.abs(rng.standard_normal((rows, rank)))
    return values / np.linalg.norm(values, axis=1, keepdims=True)


def _positions(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each value sits in the sorted ``ids``, and whether it is there at all."""
    at = np.clip(np.searchsorted(ids, values), 0, len(ids) - 1)
    return at, ids[at] == values


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ½xᵀAx − bᵀx with x ≥ 0, as the least squares ‖Lᵀx − L⁻¹b‖ where A = LLᵀ."""
    from scipy.linalg import cholesky, solve_triangular  # heavy: SciPy
    from scipy.optimize import nnls

    lower = cholesky(a, lower=True)
    return nnls(lower.T, solve_triangular(lower, b, lower=True))[0]


def recommendations(model: SparkALS, options: dict) -> dict[str, pa.Table]:
    """The tables ``userRec``/``itemRec`` ask for, by their folder name under TARGET/data."""
    asked = {"userRec": True, "itemRec": False}
    return {name: model.recommend(options[name], for_users=users) for name, users in asked.items()
            if options.get(name) is not None}


def _als(kwargs: dict, n_samples: int) -> SparkALS:
    return SparkALS(**kwargs)


PARAMS = (
    spark_param("rank", "rank", _at_least(1, to_int), 10, "number of latent factors"),
    spark_param("maxIter", "max_iter", _at_least(0, to_int), 10, "number of alternating iterations"),
    spark_param("regParam", "reg_param", _at_least(0, float), 0.1,
          "regularisation, scaled by each user's (item's) number of ratings"),
    spark_param("implicitPrefs", "implicit_prefs", boolean, False, "ratings are implicit preferences (confidence)"),
    spark_param("alpha", "alpha", _at_least(0, float), 1.0, "implicitPrefs: confidence 1 + alpha·|rating|"),
    spark_param("nonnegative", "nonnegative", boolean, False, "factors constrained to be non-negative (NNLS)"),
    spark_param("coldStartStrategy", "cold_start_strategy", _cold_start, "nan",
          "unknown users/items in evaluateTable: nan (rmse is NaN) or drop (rows left out)"),
    spark_param("userCol", "user_col", str, "user", "user id column (whole numbers)"),
    spark_param("itemCol", "item_col", str, "item", "item id column (whole numbers)"),
    spark_param("ratingCol", "rating_col", str, "rating", "rating column"),
    spark_param("numUserBlocks", None, to_int, 10, "accepted for Spark compatibility; no effect"),
    spark_param("numItemBlocks", None, to_int, 10, "accepted for Spark compatibility; no effect"),
    spark_param("blockSize", None, to_int, 4096, "accepted for Spark compatibility; no effect"),
    spark_param("checkpointInterval", None, to_int, 10, "accepted for Spark compatibility; no effect"),
    spark_param("intermediateStorageLevel", None, str, "MEMORY_AND_DISK", "accepted for Spark compatibility; no effect"),
    spark_param("finalStorageLevel", None, str, "MEMORY_AND_DISK", "accepted for Spark compatibility; no effect"),
    SEED,
)


def explain(model: SparkALS) -> dict[str, float]:
    """modelExplain's rows for ALS, whose factors belong to no feature: the numeric parameters
    that shaped them, by Spark's name (booleans as 1/0), and their shapes (Spark's ALSModel:
    rank, userFactors, itemFactors)."""
    used = {p.name: getattr(model, p.target) for p in PARAMS if p.target is not None}
    numbers = {name: float(value) for name, value in used.items() if isinstance(value, (bool, int, float))}
    return {**numbers, "numUsers": len(model.user_ids), "numItems": len(model.item_ids)}


ALGORITHMS = (
    Algorithm(
        name="ALSInPlace", kind=RECOMMENDER, library="npz", implementation="mlsql_ray.ml.algs.als.SparkALS",
        params=PARAMS,
        build=_als,
        statement_params=(
            spark_param("userRec", "userRec", _at_least(1, to_int), None, "write the top N items per user to TARGET/data/userRec"),
            spark_param("itemRec", "itemRec", _at_least(1, to_int), None, "write the top N users per item to TARGET/data/itemRec"),
        ),
        id_params=("userCol", "itemCol"), label_param="ratingCol",
        tables=recommendations,
        explain=explain,
        no_inference="as in Byzer (ml/algs/als.md), its recommendations are the tables train writes with "
                     "userRec=\"N\" and itemRec=\"N\" (load parquet.`TARGET/data/userRec` as recs)",
    ),
)
