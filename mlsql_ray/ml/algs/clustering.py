"""KMeans and LDA (Latent Dirichlet Allocation) → scikit-learn, unsupervised: no label column.
KMeans runs once from k-means++ (Spark's k-means|| is its parallel form); LDA's ``online``
optimizer is scikit-learn's online variational Bayes, ``em`` its batch variant."""

from __future__ import annotations

from ..algorithm import CLUSTERER, TOPICS, Algorithm, spark_param, to_int
from .common import SEED


def _init_mode(text: str) -> str:
    modes = {"k-means||": "k-means++", "k-means++": "k-means++", "random": "random"}
    if text not in modes:
        raise ValueError("expected k-means|| or random")
    return modes[text]


def _optimizer(text: str) -> str:
    modes = {"online": "online", "em": "batch"}
    if text not in modes:
        raise ValueError("expected online or em")
    return modes[text]


def _positive_or_auto(text: str):
    return None if text in ("", "auto", "-1") else float(text)


def _kmeans(kwargs: dict, n_samples: int):
    from sklearn.cluster import KMeans  # heavy: scikit-learn

    return KMeans(n_init=1, **kwargs)


def _lda(kwargs: dict, n_samples: int):
    from .spark_lda import SparkLDA  # heavy: it imports scikit-learn

    return SparkLDA(**kwargs)


ALGORITHMS = (
    Algorithm(
        name="KMeans", kind=CLUSTERER, library="skops", implementation="sklearn.cluster.KMeans",
        params=(
            spark_param("k", "n_clusters", to_int, 2, "number of clusters"),
            spark_param("maxIter", "max_iter", to_int, 20, "maximum number of iterations"),
            spark_param("tol", "tol", float, 1e-4, "convergence tolerance"),
            spark_param("initMode", "init", str, "k-means||", "k-means|| (k-means++) or random", adapt=_init_mode),
            spark_param("initSteps", None, to_int, 2, "accepted for Spark compatibility; no effect"),
            spark_param("distanceMeasure", None, str, "euclidean", "euclidean only"),
            SEED,
        ),
        build=_kmeans,
    ),
    Algorithm(
        name="LDA", kind=TOPICS, library="skops", implementation="sklearn.decomposition.LatentDirichletAllocation",
        params=(
            spark_param("k", "n_components", to_int, 10, "number of topics"),
            spark_param("maxIter", "max_iter", to_int, 20, "maximum number of iterations"),
            spark_param("docConcentration", "doc_topic_prior", str, "auto", "prior of document-topic weights (auto: 1/k)",
                  adapt=_positive_or_auto),
            spark_param("topicConcentration", "topic_word_prior", str, "auto", "prior of topic-word weights (auto: 1/k)",
                  adapt=_positive_or_auto),
            spark_param("optimizer", "learning_method", str, "online", "online or em", adapt=_optimizer),
            spark_param("learningOffset", "learning_offset", float, 1024.0, "online: downweights early iterations"),
            spark_param("learningDecay", "learning_decay", float, 0.51, "online: learning rate decay"),
            spark_param("subsamplingRate", None, float, 0.05, "accepted for Spark compatibility; whole batches are used"),
            spark_param("checkpointInterval", None, to_int, 10, "accepted for Spark compatibility; no effect"),
            SEED,
        ),
        build=_lda, threads_param="n_jobs",
    ),
)
