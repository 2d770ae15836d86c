"""The kinds of negative image: `images.types` in config names them.

A kind is an `ImageType` registered under its name (`@IMAGE_NEGATIVES.add("flip")`) that owns what its edit
is: which sites of a path it offers (`sites`), why it refuses one (`refusal`: a swap of unlike boxes, a
photo with print for a flip), how a site becomes an `ImageEdit`, either at once (`edit`: flips, swaps,
removals) or for a word the language backend chose (`needs_word`: replacements; `options` lists the
candidate words, `renderable` says whether the backend can paint one, `edit_with` renders it), what a
chosen edit counts (`chosen`: a flip's quota per photo) and where the target is in the edited picture
(`target_box`: mirrored by a flip); `label` and `description` say what it is to a reader (the review app), and
`in_paper` whether it is one of FineCops-Ref's five (the default `images.types` with a generative backend),
`offline` why the offline backend does not make it unless asked (None: it does; `default_types`). The search,
the checks
(the original path must match nothing in the edited graph) and the inpainting are shared
(`generators/images/stage.py`). Adding a kind is one file in `generators/images/` with its class, and a
test (`remove.py` is the worked example).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from PIL import Image

from hardneg.backends.inpaint import InpaintBackend
from hardneg.core.edits import has_left_right
from hardneg.core.plugins import IMAGE_NEGATIVES, INPAINT_BACKENDS
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.generators.images.edits import (
    ImageContext,
    ImageEdit,
    attribute_edit,
    attribute_options,
    attribute_renderable,
    name_options,
    rename_edit,
    rename_renderable,
    swap_refusal,
)
from hardneg.generators.images.flip import print_refusal
from hardneg.generators.images.swaps import pair, swap_attributes_edit, swap_objects_edit
from hardneg.generators.text.sites import SearchState, Site

if TYPE_CHECKING:
    from hardneg.core.config import RunConfig


@dataclass(slots=True, kw_only=True)
class ImageSearchState(SearchState):
    """One positive's walk through its image sites, with what the image search needs: its graph, its photo
    (RGB, and the source JPEG's quantisation to save edits like it), the path nodes' editable objects and
    the edits chosen so far."""

    graph: SceneGraph
    image: Image.Image
    quant: tuple[Any, Any]
    objects: list[SceneObject | None]
    chosen: list[ImageEdit] = field(default_factory=list)


class ImageType:
    """One kind of negative image; a search makes one instance of each kind it makes (a kind may keep count)."""

    name: ClassVar[str]  # set by the registry's decorator
    label: ClassVar[str]  # a few words for a reader ("objects swapped")
    description: ClassVar[str]  # what the edit does to the picture
    rarity: ClassVar[int]  # kinds few paths allow come first (generators/text/sites.py)
    part: ClassVar[str]  # what a site of the kind changes: "object", "attribute", or the whole picture ("flip")
    needs_word: ClassVar[bool] = False
    in_paper: ClassVar[bool] = False  # one of FineCops-Ref's kinds: made by a generative backend by default
    # Why the offline backend (OpenCV) does not make this kind unless `images.types` names it; None: it does,
    # because its edits are verified in the pixels and a person accepted at least 90% of those the `edits`
    # filter kept on labelled real photos (benchmarks/edit_labels.py).
    offline: ClassVar[str | None] = None
    offline_default: ClassVar[bool] = False  # a kind beyond the paper's that the offline backend makes by default
    painted: ClassVar[bool] = True  # the inpainting backend paints the edit's regions; False: `picture` makes it

    def sites(self, shared: list[Site], path: PathNode, objects: list[SceneObject | None]) -> list[Site]:
        """This kind's sites of a path. `shared` are the sites of the algorithm text and image negatives
        share (`generators/text/sites.py`), computed once per positive; `objects` are the nodes' editable
        objects (None: not editable). The built-in kinds pick theirs from `shared`."""
        return [s for s in shared if s.negative_type == self.name]

    def refusal(
        self, site: Site, objects: list[SceneObject | None], st: ImageSearchState, ctx: ImageContext
    ) -> str | None:
        """Why this kind makes no edit at a site that needs no word, beyond the word tables' rules (None: it
        may try). `st` holds the source `graph` and `image`."""
        return None

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
        return None

    def options(self, site: Site, obj: SceneObject, ctx: ImageContext) -> tuple[str, ...]:
        """A kind that needs a word: the words the language backend may choose, most frequent first."""
        return ()

    def renderable(
        self, site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
    ) -> bool:
        """Whether `edit_with` can render `word`, without reading any donor image."""
        return False

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
        return None

    def chosen(self, st: ImageSearchState, edit: ImageEdit) -> None:
        """An edit of this kind was chosen for a positive (a kind with a quota counts it)."""

    def target_box(self, box: list[int], width: int) -> list[int]:
        """Where the positive's target is in the edited picture (`box` in the source's)."""
        return box

    def picture(self, image: Image.Image) -> Image.Image:
        """The edited picture, for a kind the inpainting backend does not paint (`painted` False)."""
        raise NotImplementedError(f"{self.name}: the inpainting backend paints this kind's edits")


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
    part = "object"
    needs_word = True
    in_paper = True
    offline = PASTE_OFF

    # each step bound as it stands in `edits.py` (its signature is the method's)
    options = staticmethod(name_options)
    renderable = staticmethod(rename_renderable)
    edit_with = staticmethod(rename_edit)


@IMAGE_NEGATIVES.add("replace_attribute", order=20)
class ReplaceAttribute(ImageType):
    label = "attribute replaced"
    description = "an object's attribute repainted (a colour recoloured, another attribute inpainted)"
    rarity = 2
    part = "attribute"
    needs_word = True
    in_paper = True

    options = staticmethod(attribute_options)
    renderable = staticmethod(attribute_renderable)
    edit_with = staticmethod(attribute_edit)


@IMAGE_NEGATIVES.add("swap_object", order=40)
class SwapObject(ImageType):
    label = "objects swapped"
    description = "two objects of the expression trade places: each one's crop pasted into the other's box"
    rarity = 1
    part = "object"
    in_paper = True
    offline = PASTE_OFF

    def refusal(
        self, site: Site, objects: list[SceneObject | None], st: ImageSearchState, ctx: ImageContext
    ) -> str | None:
        return swap_refusal(*pair(site, objects))

    edit = staticmethod(swap_objects_edit)


@IMAGE_NEGATIVES.add("swap_attribute", order=50)
class SwapAttribute(ImageType):
    label = "attributes swapped"
    description = "two objects trade an attribute of one category (their colours repainted)"
    rarity = 0
    part = "attribute"
    in_paper = True
    offline = SWAP_COLOUR_OFF

    edit = staticmethod(swap_attributes_edit)


@IMAGE_NEGATIVES.add("flip", order=60)
class Flip(ImageType):
    label = "mirrored"
    description = "the picture mirrored left to right, where the expression says left or right"
    rarity = 0
    part = "flip"
    in_paper = True
    offline = FLIP_OFF
    painted = False  # the photo mirrored is the one candidate

    def __init__(self) -> None:
        self.flips: Counter = Counter()  # flips chosen per source image
        self.printed: dict[str, str | None] = {}  # per source image: why a mirror of it would show print

    def sites(self, shared: list[Site], path: PathNode, objects: list[SceneObject | None]) -> list[Site]:
        """One site where anything in the path says left or right: level 1 when the target's own words do."""
        nodes = path.nodes()
        if not any(says_left_right(n) for n in nodes):
            return []
        return [Site(self.name, 1 if says_left_right(nodes[0]) else 2, (0,))]

    def refusal(
        self, site: Site, objects: list[SceneObject | None], st: ImageSearchState, ctx: ImageContext
    ) -> str | None:
        """Why this positive's photo gets no (further) flip: print in view (a name that carries it, or lines
        of letters in the pixels: generators/images/flip.py), or its quota of flips is taken."""
        image_id = st.positive.image_id
        if image_id not in self.printed:  # one look per photo, however many of its positives ask
            names = [o.name for o in st.graph.objects.values()]
            self.printed[image_id] = print_refusal(st.image, names, ctx.words)
        if self.printed[image_id] is not None:
            return self.printed[image_id]
        if self.flips[image_id] >= ctx.max_flips_per_image:
            return f"this photo already has {ctx.max_flips_per_image} flip(s) (images.max_flips_per_image)"
        return None

    def edit(
        self,
        site: Site,
        objects: list[SceneObject | None],
        image: Image.Image,
        ctx: ImageContext,
        graph: SceneGraph | None = None,
        backend: InpaintBackend | None = None,
    ) -> ImageEdit | None:
        return ImageEdit(site, {"op": "flip"})

    def chosen(self, st: ImageSearchState, edit: ImageEdit) -> None:
        self.flips[st.positive.image_id] += 1

    def target_box(self, box: list[int], width: int) -> list[int]:
        x, y, w, h = box
        return [width - x - w, y, w, h]

    def picture(self, image: Image.Image) -> Image.Image:
        return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


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
    if INPAINT_BACKENDS.get(backend, "images.backend").generative:
        return tuple(n for n, c in kinds if c.in_paper)
    return tuple(n for n, c in kinds if c.offline is None and c.in_paper) + tuple(
        n for n, c in kinds if c.offline is None and not c.in_paper and c.offline_default
    )


def off_by_default(backend: str) -> dict[str, str]:
    """The paper's kinds the backend does not make by default, with why (for stats.md and the README)."""
    if INPAINT_BACKENDS.get(backend, "images.backend").generative:
        return {}
    return {n: c.offline or "" for n, c in IMAGE_NEGATIVES.items() if c.in_paper and c.offline is not None}


def image_types(cfg: RunConfig) -> tuple[str, ...]:
    """The kinds of negative image the run makes: `images.types`, or the backend's defaults."""
    return tuple(cfg.images.types) if cfg.images.types is not None else default_types(cfg.images.backend)
