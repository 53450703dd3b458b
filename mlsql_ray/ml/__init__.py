"""Training from SQL: ``train``/``predict``/``register`` with built-in algorithms.

``registry`` knows the algorithms (one adapter module each in ``algs``), ``runner`` turns a
train statement's options into parameter groups and fits them (in parallel on Ray), ``store``
keeps them as a Delta model table, ``predictor`` loads them back for ``predict`` and
``register``, ``sources`` answers ``load modelList/modelParams/modelExplain``. The engine calls
in through ``engine/learning.py``; nothing here knows about sessions.
"""
