"""What a training run returns, in either mode."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..models import model_from_bytes, rows_from_model_file
from ..storage.rows import FILE_SCHEMA
from ..storage.stored import KERAS, recorded

TRAIN_METADATA_KEY = "mlsql.train"


@dataclass
class TrainResult:
    """What ``fit`` returns: the per-round history, the final weights and the model file."""

    history: list[dict]
    weights: list[np.ndarray]
    model_file: bytes  # a Keras 3 .keras file with the averaged weights
    workers: int
    elapsed: float
    read_seconds: list[float] = field(default_factory=list)  # per worker: its partition → numpy
    startup_seconds: float = 0.0  # from the call until every worker held its data and model
    _model: object = field(default=None, repr=False)

    @property
    def model(self):
        """The trained Keras model, loaded in this process on first use."""
        if self._model is None:
            self._model = model_from_bytes(self.model_file)
        return self._model

    def model_rows(self) -> list[dict]:
        """The model as ``schema=file`` rows, ready for ``ray_context.build_result``."""
        return rows_from_model_file(self.model_file)

    def model_table(self):
        """The model rows as an Arrow table that also carries ``summary()`` and its kind of model
        (``storage.stored``) as schema metadata; saving it to Delta stores both with that table version."""
        schema = FILE_SCHEMA.with_metadata({TRAIN_METADATA_KEY: json.dumps(self.summary()), **recorded(KERAS)})
        return pa.Table.from_pylist(self.model_rows(), schema=schema)

    def summary(self) -> dict[str, str]:
        """Final metrics as strings, e.g. for Delta commit metadata."""
        last = self.history[-1] if self.history else {}
        facts = {"rounds": len(self.history), "workers": self.workers, "elapsed_s": round(self.elapsed, 1)}
        facts.update({k: round(v, 4) for k, v in last.items() if isinstance(v, float) and k != "elapsed"})
        return {k: str(v) for k, v in facts.items()}
