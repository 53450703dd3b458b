"""The Daft engine of a session whose ``sql_engine`` is ``daft`` (docs/daft.md, issue 41): Spark SQL
translated for Daft or refused (``translate``), and loads, selects and saves as lazy Daft DataFrames
on the session's Ray (``frames``). Daft itself is imported only when a session chooses it."""
