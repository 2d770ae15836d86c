"""The swaps as edits of the picture: two objects of the expression trade places (each one's own crop pasted
into the other's box) or trade an attribute of one category (each repainted). Their signatures are
`ImageType.edit`'s, so the kinds bind them as they stand (`generators/images/types.py`)."""

from __future__ import annotations

from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintBackend
from hardneg.core.records import SceneGraph, SceneObject
from hardneg.generators.images.edits import (
    ImageContext,
    ImageEdit,
    attribute_region,
    crop,
    inside_of,
    on_it,
    prompt,
    swap_names_edit,
)
from hardneg.generators.text.sites import Site


def pair(site: Site, objects: list[SceneObject | None]) -> tuple[SceneObject, SceneObject]:
    """The two objects a swap site exchanges (`enumerate_sites` only makes swaps between editable objects)."""
    a, b = (objects[i] for i in site.nodes)
    assert a is not None and b is not None
    return a, b


def swap_objects_edit(
    site: Site,
    objects: list[SceneObject | None],
    image: Image.Image,
    ctx: ImageContext,
    graph: SceneGraph | None = None,
    backend: InpaintBackend | None = None,
) -> ImageEdit:
    """Two objects trade places: each one's own crop, with its looks, pasted into the other's box (and, for a
    backend that pastes crops, whatever else the crop holds comes along)."""
    a, b = pair(site, objects)
    copies = getattr(backend, "copies_donors", True)
    regions = (
        EditRegion(a.box, "replace", prompt((), b.name), donor=crop(image, b.box)),
        EditRegion(b.box, "replace", prompt((), a.name), donor=crop(image, a.box)),
    )
    return ImageEdit(site, swap_names_edit(a, b, ctx, graph if copies else None, copies), regions)


def swap_attributes_edit(
    site: Site,
    objects: list[SceneObject | None],
    image: Image.Image,
    ctx: ImageContext,
    graph: SceneGraph | None = None,
    backend: InpaintBackend | None = None,
) -> ImageEdit:
    """Two objects trade the site's attributes (`site.word` on the first, `site.other` on the second): each
    repainted."""
    a, b = pair(site, objects)
    x, y, c = site.word, site.other, site.category
    regions = (
        attribute_region(a.box, y, c, a.name, x, inside_of(graph, a)),  # type: ignore[arg-type]
        attribute_region(b.box, x, c, b.name, y, inside_of(graph, b)),  # type: ignore[arg-type]
    )
    edit = {"op": "swap_attributes", "objects": [a.id, b.id], "from": [x, y], **on_it(regions)}
    return ImageEdit(site, edit, regions)
