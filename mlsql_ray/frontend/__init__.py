"""The front ends over a Session: the ``mlsql-ray`` command (``cli``, ``submit``), the ``%%mlsql``
magic (``magic``), and what they share with the Jupyter kernel (mlsql_ray.kernel): the one driver
that parses, runs and reports a request (``driver``), how results, errors and progress are shown
(``present``, ``display``) and how Ctrl-C reaches a running statement (``interrupts``)."""
