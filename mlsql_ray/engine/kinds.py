"""The one lookup of what kind of model a FORMAT is (``ml.kinds``), over this engine's ETs and
script UDFs: what ``train``, ``predict``, ``register``, ``load modelParams/modelExample``, ``!show``
and the start ahead ask (``KINDS.find(fmt, question)``)."""

from __future__ import annotations

from ..ml.kinds import ALGORITHMS, KERAS, FeatureETs, Kinds
from . import ets, udfs

FEATURE_ETS = FeatureETs(ets)
KINDS = Kinds(udfs.SCRIPT_UDF, KERAS, FEATURE_ETS, ALGORITHMS)
