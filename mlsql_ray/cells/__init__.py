"""``--%python`` cells: pyjava's RayContext over Arrow partitions in Ray, and the cell runner."""

from .context import CellContext, DataServer, RayContext

__all__ = ["CellContext", "DataServer", "RayContext"]
