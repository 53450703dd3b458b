"""The Jupyter kernel ``mlsql`` ("MLSQL (Ray)"): ``python -m mlsql_ray.kernel`` starts it,
``python -m mlsql_ray.kernel install [--user|--sys-prefix|--prefix DIR]`` registers it."""

__all__ = ["MLSQLKernel"]


def __getattr__(name):
    # `install` must not pay for ipykernel; the kernel class is imported when asked for
    if name == "MLSQLKernel":
        from .kernel import MLSQLKernel  # see the comment above

        return MLSQLKernel
    raise AttributeError(f"module 'mlsql_ray.kernel' has no attribute {name!r}")
