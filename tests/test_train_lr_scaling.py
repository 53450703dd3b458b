"""Synchronous training multiplies the optimizer's learning rate by the number of workers
(``train.fit``'s ``scale_learning_rate``, on by default): checked by what one SGD step does to a
weight, through the public ``train.fit`` only (issue 24, item 9).

The model is one weight w (a bias-free Dense(1), w = 1 at the start), mean squared error, plain
SGD at 0.1; each worker holds the same two rows x = 1, 2 with target 0 and takes one step of one
batch: the gradient is 2·w·mean(x²) = 5, so the averaged weight after the round is 1 - 5·rate.
With 2 workers, scaled: 1 - 5·0.2 = 0; not scaled: 1 - 5·0.1 = 0.5.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import ray.cloudpickle

from mlsql_ray import train

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers cannot import tests/

# the workers' TensorFlow start is most of the cost: the two runs share their actors
pytestmark = pytest.mark.slow

ROWS = (np.array([[1.0], [2.0]], dtype=np.float32), np.array([0.0, 0.0], dtype=np.float32))


def one_weight_model():
    from tensorflow.keras import layers, models, optimizers

    network = models.Sequential([layers.Input((1,)), layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    network.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    return network


def test_two_synchronous_workers_step_with_twice_the_learning_rate(ray_runtime):
    def weight_after_one_step(**options) -> float:
        result = train.fit(one_weight_model, [ROWS, ROWS], rounds=1, batch_size=2, **options)
        [kernel] = result.model.get_weights()
        return float(kernel[0, 0])

    with train.WarmPool() as pool, pool.active():
        scaled = weight_after_one_step()
        unscaled = weight_after_one_step(scale_learning_rate=False)
    assert unscaled == pytest.approx(0.5, abs=1e-6)
    assert scaled == pytest.approx(0.0, abs=1e-6)
