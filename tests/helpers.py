"""Tiny scene graphs built in code for unit tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from hardneg.core.executor import GraphIndex
from hardneg.core.records import PathEdge, PathNode, Relation, SameEdge, SceneGraph, SceneObject
from hardneg.core.rows import ImageNegativeRow, PositiveRow, TextNegativeRow, extended
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


def positive_row(path: PathNode, expression: str = "the thing", image_id: str = "1", **fields) -> PositiveRow:
    """A stored positive about `path`, its other fields plausible: what a filter is handed."""
    base = dict(id=1, image_id=image_id, objects_id=[n.id for n in path.nodes() if n.id], tuple=[], tuple_type="0_hop",
                level=1, spatial=False, attribute=bool(path.attributes), expression=expression, path=path.to_json(),
                bbox=[0, 0, 10, 10], width=500, height=400, distractors=0, template="0_hop@test#0", generator="test",
                risk_reasons=[])  # fmt: skip
    return PositiveRow(**{**base, **fields})


def kept_positive(path: PathNode | None = None, split: str = "train", **fields):
    """A positive the write stage publishes, in `split` (what an export reads: `kept_positives`)."""
    from hardneg.exports.common import KeptPositive

    return extended(positive_row(path or PathNode("thing", id="1"), **fields), KeptPositive, split=split)


def text_negative_row(path: PathNode, negative_type: str, change: dict, **fields) -> TextNegativeRow:
    """A stored text negative saying `path`, made by `change` of kind `negative_type`."""
    base = dict(id=2, image_id="1", positive_id=1, negative_level=1, negative_type=negative_type, shuffle_index=[0],
                ori_type="0_hop", negative_cate="text", tuple_type="0_hop", level=1, expression="the thing",
                template_expression="the thing", expression_source="template", path=path.to_json(), change=change,
                bbox=[0, 0, 10, 10], width=500, height=400, template="0_hop@test#0", generator="test",
                backend="lexicon")  # fmt: skip
    return TextNegativeRow(**{**base, **fields})


def image_negative_row(edit: dict, path: PathNode | None = None, **fields) -> ImageNegativeRow:
    """A stored image negative made by `edit` (a scene-graph change) of the positive saying `path`."""
    base = dict(id=3, image_id="1_3", source_image_id="1", positive_id=1, negative_level=1, negative_type="test",
                shuffle_index=[0], ori_type="0_hop", negative_cate="image", tuple_type="0_hop", level=1,
                expression="the thing", path=(path or PathNode("thing", id="a")).to_json(), edit=edit, edit_boxes=[],
                file_name="images/1_3_0.jpg", candidates=["images/1_3_0.jpg"], bbox=[0, 0, 10, 10], width=500,
                height=400, generator="test", backend="test")  # fmt: skip
    return ImageNegativeRow(**{**base, **fields})


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
