"""From a site to an image edit: the scene-graph change (`core.edits`) and the boxes to repaint.

A `Site` (generators/sites.py) says what to alter; an `ImageEdit` says how the image changes: the
recorded `edit` (the path form's edits: flip, rename, set_attribute, swap_names, swap_attributes, remove) and
the `EditRegion`s the inpainting backend paints. An edit is kept only when the original path matches
nothing in the edited graph (`matches_nothing`) and the backend can render every region.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintBackend
from hardneg.core.attributes import AttributeTable
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathNode, SceneGraph, SceneObject, keyed_seed
from hardneg.core.runfolder import image_file
from hardneg.core.words import Words
from hardneg.generators.sites import Site

Box = tuple[int, int, int, int]


@dataclass(slots=True, frozen=True)
class Donor:
    """An object of some name in another image of the corpus: its crop is pasted by copy-paste backends."""

    image_id: str
    object_id: str
    box: Box


@dataclass(slots=True, frozen=True)
class ImageEdit:
    site: Site
    edit: dict[str, Any]
    regions: tuple[EditRegion, ...] = ()  # none for a flip: the whole image mirrors


@dataclass(slots=True)
class ImageContext:
    table: AttributeTable
    words: Words
    vocab: dict[str, Counter]
    donors: dict[str, list[Donor]]  # name -> donor objects across the corpus
    images_dir: Path
    out_dir: Path  # <run>/images
    seed: int
    candidates: int = 10
    chunk_jobs: int = 8  # jobs inpainted per backend call; bounds memory to chunk_jobs x candidates images
    per_positive: int = 1
    max_rounds: int = 3
    types: tuple[str, ...] = ("replace_object", "replace_attribute", "swap_object", "swap_attribute", "flip")
    # Which objects may be edited: the pipeline passes the target filter (no stuff such as "floor", no
    # box covering most of the image), so an edit never repaints the ground or pastes a sky into a cup.
    editable: Callable[[SceneObject, SceneGraph], bool] = lambda obj, graph: True
    max_options: int = 40


def prompt(attrs: tuple[str, ...], name: str) -> str:
    words = " ".join((*attrs, name))
    return f"a photo of {'an' if words[:1] in 'aeiou' else 'a'} {words}"


def attribute_region(box: Box, new: str, category: str, name: str, old: str | None = None) -> EditRegion:
    if category == "color":
        return EditRegion(box, "recolor", prompt((new,), name), color=new, source_color=old)
    return EditRegion(box, "replace", prompt((new,), name))


def crop(image: Image.Image, box: Box) -> Image.Image:
    x, y, w, h = box
    return image.crop((x, y, x + w, y + h))


def matches_nothing(path: PathNode, graph: SceneGraph, edit: dict[str, Any], table: AttributeTable) -> bool:
    return execute(path.without_ids(), GraphIndex(apply_edit(graph, edit), table)) == frozenset()


def direct_edit(site: Site, objects: list[SceneObject | None], image: Image.Image, ctx: ImageContext) -> ImageEdit:
    """The edit of a site that needs no word: a flip, or a swap of two objects' names or attributes."""
    if site.negative_type == "flip":
        return ImageEdit(site, {"op": "flip"})
    i, k = site.nodes
    oi, ok = objects[i], objects[k]
    assert oi is not None and ok is not None  # enumerate_sites only makes swaps between editable objects
    if site.negative_type == "swap_object":  # each object's own crop is pasted into the other's box
        regions = (
            EditRegion(oi.box, "replace", prompt((), ok.name), donor=crop(image, ok.box)),
            EditRegion(ok.box, "replace", prompt((), oi.name), donor=crop(image, oi.box)),
        )
        return ImageEdit(site, {"op": "swap_names", "objects": [oi.id, ok.id]}, regions)
    a, b, c = site.word, site.other, site.category
    regions = (attribute_region(oi.box, b, c, oi.name, a), attribute_region(ok.box, a, c, ok.name, b))  # type: ignore[arg-type]
    return ImageEdit(site, {"op": "swap_attributes", "objects": [oi.id, ok.id], "from": [a, b]}, regions)


def replace_options(site: Site, obj: SceneObject, ctx: ImageContext) -> tuple[str, ...]:
    """Same-category corpus words for a replace site, most frequent first, never one the object has."""
    if site.negative_type == "replace_object":
        pool = [m for m in ctx.vocab["names"] if ctx.words.name_category(m) == site.category and m != obj.name]
        return tuple(m for m in pool if ctx.words.names_contradict(obj.name, m)[0])
    pool = [b for b in ctx.vocab["attributes"] if ctx.table.category(b) == site.category and b not in obj.attributes]
    # the new attribute must contradict the one the path names and every one the object already has
    return tuple(
        b
        for b in pool
        if ctx.words.attributes_contradict(site.word or "", b)[0]
        and all(
            ctx.words.attributes_contradict(a, b)[0] for a in obj.attributes if ctx.table.category(a) == site.category
        )
    )


_PLACEHOLDER = Image.new("RGB", (1, 1))


def renderable(
    site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
) -> bool:
    """Whether `replace_edit` can render `word`, without reading any donor image."""
    if site.negative_type == "replace_attribute":
        return backend.supports(attribute_region(obj.box, word, site.category, obj.name))  # type: ignore[arg-type]
    has_donor = any(d.image_id != graph.image_id for d in ctx.donors.get(word, []))
    return backend.supports(
        EditRegion(obj.box, "replace", prompt((), word), donor=_PLACEHOLDER if has_donor else None)
    ) or backend.supports(EditRegion(obj.box, "remove", "background"))


class DonorUnreadable(Exception):
    """A donor crop could not be read: the word is not renderable by copy-paste (never a silent removal)."""


def replace_edit(
    site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
) -> ImageEdit | None:
    """The edit of a replace site for `word`; None when the backend cannot render it. Raises
    `DonorUnreadable` when the donor image it needs cannot be read."""
    if site.negative_type == "replace_attribute":
        region = attribute_region(obj.box, word, site.category, obj.name, site.word)  # type: ignore[arg-type]
        if not backend.supports(region):
            return None
        return ImageEdit(site, {"op": "set_attribute", "object": obj.id, "from": site.word, "to": word}, (region,))
    # replace_object: a donor of the new name from another image; with none (copy-paste backends) removal
    keep_attrs = tuple(a for a in obj.attributes if ctx.table.category(a) == "color")[:1]
    donors = [d for d in ctx.donors.get(word, []) if d.image_id != graph.image_id]
    donor = None
    if donors:
        pick = donors[random.Random(keyed_seed(ctx.seed, "donor", graph.image_id, obj.id, word)).randrange(len(donors))]
        try:
            with Image.open(image_file(ctx.images_dir, pick.image_id)) as im:
                donor = crop(im.convert("RGB"), pick.box)
        except (OSError, SyntaxError, ValueError) as e:
            raise DonorUnreadable(f"donor image {pick.image_id}.jpg for {word!r} unreadable: {e}") from e
    region = EditRegion(obj.box, "replace", prompt(keep_attrs, word), donor=donor)
    if backend.supports(region):
        return ImageEdit(site, {"op": "rename", "object": obj.id, "name": word}, (region,))
    region = EditRegion(obj.box, "remove", "background")
    if backend.supports(region):
        return ImageEdit(site, {"op": "remove", "object": obj.id}, (region,))
    return None
