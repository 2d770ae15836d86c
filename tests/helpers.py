"""Tiny scene graphs built in code for unit tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from hardneg.core.executor import GraphIndex
from hardneg.core.records import PathEdge, PathNode, Relation, SameEdge, SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable

REPO_ROOT = Path(__file__).resolve().parent.parent
PHOTOS = REPO_ROOT / "tests" / "data" / "photos8"  # eight real photos with their graphs (its README)


def obj(
    oid: str,
    name: str,
    attrs: tuple[str, ...] = (),
    rels: tuple[tuple[str, str], ...] = (),
    box: tuple[int, int, int, int] = (10, 10, 40, 40),
) -> SceneObject:
    x, y, w, h = box
    return SceneObject(oid, name, x, y, w, h, tuple(attrs), tuple(Relation(n, o) for n, o in rels))


def graph(*objects: SceneObject, image_id: str = "1", width: int = 500, height: int = 400) -> SceneGraph:
    return SceneGraph(image_id, width, height, {o.id: o for o in objects})


def index(g: SceneGraph) -> GraphIndex:
    return GraphIndex(g, AttributeTable.load())


def node(
    name: str,
    *attrs: str,
    rel: list[tuple[str, PathNode]] | None = None,
    same: list[tuple[str, PathNode]] | None = None,
    oid: str | None = None,
) -> PathNode:
    return PathNode(
        name=name,
        attributes=tuple(attrs),
        relations=tuple(PathEdge(r, n) for r, n in rel or []),
        same=tuple(SameEdge(c, n) for c, n in same or []),
        id=oid,
    )


@contextlib.contextmanager
def prefect_harness_in(home: Path) -> Iterator[None]:
    """An isolated ephemeral Prefect API with its home and results storage under `home`, so nothing leaks
    across sessions."""
    os.environ["PREFECT_HOME"] = str(home)
    os.environ["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(home / "results")
    from hardneg.cli import prefect_env_defaults

    prefect_env_defaults()
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
