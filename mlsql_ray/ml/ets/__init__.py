"""The ETs that learn (Byzer's feature engineering estimators, ``ml/feature/*.md``): ``train T as
ET.`TARGET``` fits and saves a state (``fitted``), ``register``/``predict`` apply it. Each module
defines ``ETS``; the one registry of every ET is ``engine.ets``, which lists them with the ETs over
tables (this package cannot see those: the engine is above it)."""
