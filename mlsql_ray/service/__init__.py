"""``mlsql-ray serve``: the engine as a long-lived service speaking Byzer's REST API (``/run/script``,
``/model/predict``, ``/runningjobs``, ``/killjob``, ...), one process keeping Ray, DuckDB, the
imported libraries and the registered models warm across requests. See docs/service.md."""
