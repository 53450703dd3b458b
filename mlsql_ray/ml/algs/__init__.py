"""One module per algorithm family; each defines ``ALGORITHMS``, a tuple of ``Algorithm``."""
