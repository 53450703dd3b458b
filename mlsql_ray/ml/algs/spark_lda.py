"""scikit-learn's LDA accepting Dirichlet priors above 1: it limits them to [0, 1] in its
parameter check only, and Spark's examples use 3.0. Its own module so that importing the
algorithm table does not import scikit-learn; serialize trusts this one class of ours."""

from __future__ import annotations

from numbers import Real

from sklearn.decomposition import LatentDirichletAllocation
from sklearn.utils._param_validation import Interval

_POSITIVE = [None, Interval(Real, 0, None, closed="neither")]


class SparkLDA(LatentDirichletAllocation):
    _parameter_constraints = {**LatentDirichletAllocation._parameter_constraints,
                              "doc_topic_prior": _POSITIVE, "topic_word_prior": _POSITIVE}
