"""``TreeBuildExt`` (``extension/et/TreeBuildExt.md``): parent-child rows as trees.

The (id, parent) pairs are few compared with the rows that carry them, so the trees are built
in Python over the distinct pairs DuckDB hands back."""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...spark import sql_build
from ...options import Param
from ...ml.ets.base import ET, Call
from .base import PARENT_CHILD_DATA, input_name


class _Forest:
    """Nodes in first-seen order, children per node, and each node's height (a leaf is 0); a
    node on or above a cycle gets ``limit`` as its height, as Byzer's recursion cut-off does."""

    def __init__(self, pairs: list[tuple], top_mark, limit: int):
        self.parent = {}
        for node, parent in pairs:
            if node != parent:
                self.parent[node] = parent
        self.children: dict = {node: [] for node in self.parent}
        self.roots = []
        for node, parent in self.parent.items():
            if parent is None or parent == top_mark or parent not in self.children:
                self.roots.append(node)
            else:
                self.children[parent].append(node)
        self.limit = limit
        self.height = self._heights()

    def _heights(self) -> dict:
        height: dict = {}
        for start in self.children:
            stack, on_path = [(start, iter(self.children[start]))], {start}
            while stack:
                node, pending = stack[-1]
                child = next(pending, None)
                if child is None:
                    stack.pop()
                    on_path.discard(node)
                    if node not in height:
                        kids = [height[c] for c in self.children[node]]
                        height[node] = min(self.limit, 1 + max(kids)) if kids else 0
                elif child in on_path:  # a cycle: everything on the path is unbounded
                    for n, _ in stack:
                        height[n] = self.limit
                elif child not in height:
                    stack.append((child, iter(self.children[child])))
                    on_path.add(child)
        return height

    def descendants(self, node) -> list:
        found, stack = [], list(reversed(self.children[node]))
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self.children[current]))
        return found


def _node_type(id_type: pa.DataType, parent_type: pa.DataType, depth: int) -> pa.DataType:
    """The nested struct of a tree ``depth`` levels deep: (children, id, parentID), the fields in
    the order Spark's JSON reader gives them."""
    child: pa.DataType = pa.null()
    for _ in range(depth + 1):
        child = pa.struct([("children", pa.list_(child)), ("id", id_type), ("parentID", parent_type)])
    return child


def _build(session, call: Call) -> pa.Table:
    id_col = call.required("idCol", "TreeBuildExt")
    parent_col = call.required("parentIdCol", "TreeBuildExt")
    tree_type = call.option("treeType", "treePerRow").strip()
    if tree_type not in ("treePerRow", "nodeTreePerRow"):
        raise MLSQLError(f"TreeBuildExt: treeType must be treePerRow or nodeTreePerRow, not {tree_type!r}")
    limit = call.integer("recurringDependencyBreakTimes", 1000, minimum=1)
    table = input_name(session, call)
    schema = session.catalog.schema(call.table)
    for name in (id_col, parent_col):
        if name not in schema.names:
            raise MLSQLError(f"TreeBuildExt: {call.table} has no column {name!r} (columns: {', '.join(schema.names)})")
    pairs_table = session.con.sql(sql_build.shaped(  # the distinct pairs, in the order the rows first show them
        "SELECT $child, $parent FROM (SELECT $child, $parent, row_number() OVER () AS seen FROM $table) "
        "GROUP BY ALL ORDER BY min(seen)",
        child=sql_build.column(id_col), parent=sql_build.column(parent_col), table=table).sql("duckdb")).to_arrow_table()
    top_mark = call.option("topLevelMark")
    if top_mark is not None:
        top_mark = pa.array([top_mark]).cast(schema.field(parent_col).type)[0].as_py()
    pairs = list(zip(pairs_table.column(0).to_pylist(), pairs_table.column(1).to_pylist()))
    forest = _Forest(pairs, top_mark, limit)
    if tree_type == "nodeTreePerRow":
        nodes = list(forest.children)
        return pa.table({
            "id": pa.array([str(n) for n in nodes], pa.string()),
            "level": pa.array([forest.height[n] for n in nodes], pa.int32()),
            "children": pa.array([[str(d) for d in forest.descendants(n)] if forest.height[n] < limit else []
                                  for n in nodes], pa.list_(pa.string())),
        })

    def nested(node) -> dict:
        return {"children": [nested(c) for c in forest.children[node]], "id": node, "parentID": forest.parent[node]}

    roots = [r for r in forest.roots if forest.height[r] < limit]
    depth = max((forest.height[r] for r in roots), default=0)
    id_type, parent_type = schema.field(id_col).type, schema.field(parent_col).type
    return pa.table({
        "children": pa.array([nested(r)["children"] for r in roots], pa.list_(_node_type(id_type, parent_type, depth - 1))),
        "id": pa.array(roots, id_type),
        "parentID": pa.array([forest.parent[r] for r in roots], parent_type),
        "level": pa.array([forest.height[r] for r in roots], pa.int32()),
    })


ETS = (
    ET("TreeBuildExt", "parent-child rows as trees: one row per node (nodeTreePerRow) or per root (treePerRow)", _build, (
        Param("idCol", "", "the node id column (required)"),
        Param("parentIdCol", "", "the parent id column (required)"),
        Param("treeType", "treePerRow", "treePerRow: a nested children struct per root; nodeTreePerRow: "
                                        "id, level and all descendants per node"),
        Param("topLevelMark", "", "the parent id that marks a root (besides null)"),
        Param("recurringDependencyBreakTimes", "1000", "the deepest level followed; a node on a cycle gets this level"),
    ), example=PARENT_CHILD_DATA + """
run data as TreeBuildExt.`` where idCol="id" and parentIdCol="parentId" and treeType="nodeTreePerRow" as result;
"""),
)
