"""The kinds of negative image: `images.types` in config names them.

A kind is an `ImageType` registered under its name (`@IMAGE_NEGATIVES.add("flip")`): which sites of a path
it offers (`sites`), and how a site becomes an `ImageEdit`, either at once (`edit`: flips, swaps, removals)
or for a word the language backend chose (`needs_word`: replacements; `options` lists the candidate words,
`edit_with` renders one); `label` and `description` say what it is to a reader (the review app), and
`in_paper` whether it is one of FineCops-Ref's five (the default `images.types` with a generative backend),
`offline` why the offline backend does not make it unless asked (None: it does; `default_types`). The search,
the checks
(the original path must match nothing in the edited graph) and the inpainting are shared
(`generators/images/stage.py`). Adding a kind is one file in `generators/images/` with its class, and a
test (`remove.py` is the worked example).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from PIL import Image

from hardneg.backends.inpaint import InpaintBackend
from hardneg.core.edits import has_left_right
from hardneg.core.plugins import IMAGE_NEGATIVES
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

if TYPE_CHECKING:
    from hardneg.core.config import RunConfig


class ImageType:
    name: ClassVar[str]  # set by the registry's decorator
    label: ClassVar[str]  # a few words for a reader ("objects swapped")
    description: ClassVar[str]  # what the edit does to the picture
    rarity: ClassVar[int]  # kinds few paths allow come first (generators/text/sites.py)
    needs_word: ClassVar[bool] = False
    in_paper: ClassVar[bool] = False  # one of FineCops-Ref's kinds: made by a generative backend by default
    # Why the offline backend (OpenCV) does not make this kind unless `images.types` names it; None: it does,
    # because its edits are verified in the pixels and a person accepted at least 90% of those the `edits`
    # filter kept on labelled real photos (benchmarks/edit_labels.py).
    offline: ClassVar[str | None] = None
    offline_default: ClassVar[bool] = False  # a kind beyond the paper's that the offline backend makes by default

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


PASTE_OFF = (
    "needs images.backend: diffusers. Offline, a replacement is a crop pasted from another photo; on labelled "
    "real photos none was a usable photograph (docs/image_negatives.md)"
)


# Why the offline backend leaves these kinds out unless `images.types` names them: measured against the
# labels of `benchmarks/edit_labels.py` (the numbers are in docs/image_negatives.md).
SWAP_COLOUR_OFF = (
    "of the colour swaps labelled on real photos, none passed both the backend's refusals and the edits "
    "filter: its precision is not measured"
)
FLIP_OFF = (
    "the print rule kept 11 flips of labelled photos, 9 of them good (82%, under the 90% bar): it misses small "
    "lettering on a patch and handwriting on a slant"
)


@IMAGE_NEGATIVES.add("replace_object", order=10)
class ReplaceObject(ImageType):
    label = "object replaced"
    description = "an object painted over as another the language backend chose"
    rarity = 2
    needs_word = True
    in_paper = True
    offline = PASTE_OFF


@IMAGE_NEGATIVES.add("replace_attribute", order=20)
class ReplaceAttribute(ImageType):
    label = "attribute replaced"
    description = "an object's attribute repainted (a colour recoloured, another attribute inpainted)"
    rarity = 2
    needs_word = True
    in_paper = True


@IMAGE_NEGATIVES.add("swap_object", order=40)
class SwapObject(ImageType):
    label = "objects swapped"
    description = "two objects of the expression trade places: each one's crop pasted into the other's box"
    rarity = 1
    in_paper = True
    offline = PASTE_OFF


@IMAGE_NEGATIVES.add("swap_attribute", order=50)
class SwapAttribute(ImageType):
    label = "attributes swapped"
    description = "two objects trade an attribute of one category (their colours repainted)"
    rarity = 0
    in_paper = True
    offline = SWAP_COLOUR_OFF


@IMAGE_NEGATIVES.add("flip", order=60)
class Flip(ImageType):
    label = "mirrored"
    description = "the picture mirrored left to right, where the expression says left or right"
    rarity = 0
    in_paper = True
    offline = FLIP_OFF

    def sites(self, shared: list[Site], path: PathNode, objects: list[SceneObject | None]) -> list[Site]:
        """One site where anything in the path says left or right: level 1 when the target's own words do."""
        nodes = path.nodes()
        if not any(says_left_right(n) for n in nodes):
            return []
        return [Site(self.name, 1 if says_left_right(nodes[0]) else 2, (0,))]


def says_left_right(node: PathNode) -> bool:
    """Whether an attribute or relation of the node says left or right (a mirror image contradicts it)."""
    return any(has_left_right(a) for a in node.attributes) or any(has_left_right(e.name) for e in node.relations)


def image_type(name: str) -> ImageType:
    return IMAGE_NEGATIVES.get(name, "images.types")()


def default_types(backend: str) -> tuple[str, ...]:
    """The kinds made when `images.types` names none: FineCops-Ref's five with a generative backend; with
    the offline one, the registered kinds it makes by default (`ImageType.offline` None), those of the
    paper first."""
    kinds = IMAGE_NEGATIVES.items()
    if backend != "opencv":
        return tuple(n for n, c in kinds if c.in_paper)
    return tuple(n for n, c in kinds if c.offline is None and c.in_paper) + tuple(
        n for n, c in kinds if c.offline is None and not c.in_paper and c.offline_default
    )


def off_by_default(backend: str) -> dict[str, str]:
    """The paper's kinds the backend does not make by default, with why (for stats.md and the README)."""
    if backend != "opencv":
        return {}
    return {n: c.offline or "" for n, c in IMAGE_NEGATIVES.items() if c.in_paper and c.offline is not None}


def image_types(cfg: RunConfig) -> tuple[str, ...]:
    """The kinds of negative image the run makes: `images.types`, or the backend's defaults."""
    return tuple(cfg.images.types) if cfg.images.types is not None else default_types(cfg.images.backend)
