"""The ETs that learn (Byzer's feature engineering estimators, ``ml/feature/*.md``): ``train T as
ET.`TARGET``` fits and saves a state (``fitted``), ``register``/``predict`` apply it. Each module
defines ``ETS``; the engine lists them with its own ETs (``engine.ets``)."""
