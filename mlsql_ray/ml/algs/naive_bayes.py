"""NaiveBayes → scikit-learn's MultinomialNB / BernoulliNB / GaussianNB, picked by Spark's
``modelType`` (multinomial by default, as Spark); ``smoothing`` is their additive smoothing."""

from __future__ import annotations

from ..algorithm import CLASSIFIER, Algorithm, spark_param

MODEL_TYPES = ("multinomial", "bernoulli", "gaussian")


def _model_type(text: str) -> str:
    if text not in MODEL_TYPES:
        raise ValueError(f"expected one of {', '.join(MODEL_TYPES)}")
    return text


def _build(kwargs: dict, n_samples: int):
    from sklearn.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB  # heavy: scikit-learn

    kind, smoothing = kwargs.pop("modelType"), kwargs.pop("smoothing")
    if kind == "gaussian":
        return GaussianNB()
    return (MultinomialNB if kind == "multinomial" else BernoulliNB)(alpha=smoothing)


ALGORITHMS = (Algorithm(
    name="NaiveBayes", kind=CLASSIFIER, library="skops",
    implementation="sklearn.naive_bayes.MultinomialNB, BernoulliNB or GaussianNB (by modelType)",
    params=(
        spark_param("smoothing", "smoothing", float, 1.0, "additive (Laplace) smoothing"),
        spark_param("modelType", "modelType", str, "multinomial", "multinomial, bernoulli or gaussian", adapt=_model_type),
    ),
    build=_build,
),)
