"""Every kind of negative image by name: one line each (`images.types` in config names them).

A kind is an `ImageType`: which sites of a path it offers (`sites`), and how a site becomes an
`ImageEdit`, either at once (`edit`: flips, swaps, removals) or for a word the language backend chose
(`needs_word`: replacements; `options` lists the candidate words, `edit_with` renders one). The search,
the checks (the original path must match nothing in the edited graph) and the inpainting are shared
(`generators/images/stage.py`). Adding a kind is one file with its class, one line here, one test.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import import_module
from typing import ClassVar

from PIL import Image

from hardneg.backends.inpaint import InpaintBackend
from hardneg.core.errors import ConfigError
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.generators.images.edits import (
    ImageContext,
    ImageEdit,
    direct_edit,
    renderable,
    replace_edit,
    replace_options,
)
from hardneg.generators.text.sites import Site

REGISTRY: dict[str, str] = {
    "flip": "hardneg.generators.images.types:Flip",
    "replace_object": "hardneg.generators.images.types:ReplaceObject",
    "replace_attribute": "hardneg.generators.images.types:ReplaceAttribute",
    "swap_object": "hardneg.generators.images.types:SwapObject",
    "swap_attribute": "hardneg.generators.images.types:SwapAttribute",
    "remove_object": "hardneg.generators.images.remove:RemoveObject",
}


class ImageType:
    name: ClassVar[str]
    rarity: ClassVar[int]  # kinds few paths allow come first (generators/text/sites.py)
    needs_word: ClassVar[bool] = False

    def sites(self, shared: list[Site], path: PathNode, objects: list[SceneObject | None]) -> list[Site]:
        """This kind's sites of a path. `shared` are the sites of the algorithm text and image negatives
        share (`generators/text/sites.py`), computed once per positive; `objects` are the nodes' editable
        objects (None: not editable). The built-in kinds pick theirs from `shared`."""
        return [s for s in shared if s.negative_type == self.name]

    def edit(
        self,
        site: Site,
        objects: list[SceneObject | None],
        image: Image.Image,
        ctx: ImageContext,
        graph: SceneGraph | None = None,
        backend: InpaintBackend | None = None,
    ) -> ImageEdit | None:
        """The edit of a site that needs no word (None: this kind cannot make it). `graph` is the source's,
        `backend` the one that will paint it (whether it pastes crops decides what a swap shows)."""
        return direct_edit(site, objects, image, ctx, graph, getattr(backend, "copies_donors", True))

    def options(self, site: Site, obj: SceneObject, ctx: ImageContext) -> tuple[str, ...]:
        return replace_options(site, obj, ctx)

    def renderable(
        self, site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
    ) -> bool:
        return renderable(site, obj, graph, ctx, backend, word)

    def edit_with(
        self,
        site: Site,
        obj: SceneObject,
        graph: SceneGraph,
        ctx: ImageContext,
        backend: InpaintBackend,
        word: str,
        image: Image.Image | None = None,
    ) -> ImageEdit | None:
        """The edit for a word the language backend chose; `image` is the source (the backend may judge a
        region on it before painting, `image_edits.PasteRefused`)."""
        return replace_edit(site, obj, graph, ctx, backend, word, image)


class Flip(ImageType):
    name = "flip"
    rarity = 0


class SwapAttribute(ImageType):
    name = "swap_attribute"
    rarity = 0


class SwapObject(ImageType):
    name = "swap_object"
    rarity = 1


class ReplaceAttribute(ImageType):
    name = "replace_attribute"
    rarity = 2
    needs_word = True


class ReplaceObject(ImageType):
    name = "replace_object"
    rarity = 2
    needs_word = True


@cache
def image_type(name: str) -> ImageType:
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"images.types: unknown negative image type {name!r}{hint}; known: {', '.join(REGISTRY)}")
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(import_module(module), cls)()
