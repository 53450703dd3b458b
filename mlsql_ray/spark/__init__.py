"""Spark SQL's semantics on DuckDB: the translation of Spark SQL to DuckDB SQL, Spark's functions,
casts, coercions, types, datetime patterns and Java regexes, Byzer's built-in and vector
functions, the DuckDB macros they call, and Spark's forms of results. No I/O, no session."""
