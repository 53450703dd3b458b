"""The model subsystem: what fits, stores, loads, explains and serves a model.

``kinds`` says what each kind of model (algorithm, feature ET, Keras, script UDF) does for each
statement, in one lookup; ``functions`` is what ``register`` defines and the session's registry of it.
``registry`` knows the algorithms (one adapter module each in ``algs``), ``runner`` turns a
train statement's options into parameter groups and fits them (in parallel on Ray), ``store``
keeps them as a Delta model table, ``predictor`` loads them back for ``predict`` and
``register``, ``serving`` runs a model on Ray actors as a SQL function (``register``),
``sources`` answers ``load modelList/modelParams/modelExplain``, and ``ets`` holds the ETs that
learn (``train T as ScalerInPlace.`TARGET```...). ``statements`` does the model
side of those statements; the engine calls in through its statement modules and its ETs'
registry (``engine/ets``); what here takes a session uses
only its public runtime (``catalog``, ``local_path``, ``warehouse``).
"""
