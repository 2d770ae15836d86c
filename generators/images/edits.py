"""From a site to an image edit: the scene-graph change (`core.edits`) and the boxes to repaint.

A `Site` (generators/text/sites.py) says what to alter; an `ImageEdit` says how the image changes: the
recorded `edit` (the path form's edits: flip, rename, set_attribute, swap_names, swap_attributes, remove) and
the `EditRegion`s the inpainting backend paints. The recorded edit describes the pixels, not the words:
a crop pasted into another box brings its colour, material and pattern and whatever else its crop holds
(`core.edits`). An edit is kept only when the backend can render every region and the original path is
certified false on the edited graph (`falsified`): the executor matches nothing *and* every object that
could carry the path is contradicted there (`Certifier.nothing`, as for text negatives), so another
instance the graph leaves undescribed, or a relation the boxes still allow, keeps the edit out.

What a copy-paste can show convincingly is bounded (`paste_fit`, `swap_refusal`): a crop is never
blown up far beyond its own resolution or squeezed into a box of another shape (the uncovered rest
would be a smear), and two objects are swapped only when their boxes are apart and of a like size (a
straw pasted over a table's box is no photograph).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintBackend
from hardneg.core.certify import Certifier
from hardneg.core.edits import apply_edit, looks
from hardneg.core.geometry import intersection
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.plugins import IMAGE_NEGATIVES
from hardneg.core.records import PathNode, SceneGraph, SceneObject, keyed_seed
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.generators.text.sites import Site

Box = tuple[int, int, int, int]

# What a pasted crop may undergo and still look like a photograph (documented in docs/image_checks.md):
MAX_UPSCALE = 1.5  # a crop is enlarged at most this much (linear): more, and it is visibly soft
MIN_COVER = 0.6  # the fitted crop (aspect kept) covers at least this share of its box; the rest is inpainted
MAX_SWAP_SCALE = 1.6  # two swapped boxes differ in linear size (square root of area) at most this much
MAX_SWAP_OVERLAP = 0.1  # two swapped boxes share at most this share of the smaller one's area
CARRIED = 0.5  # an object with at least this share of its box inside a pasted crop travels with it
INSIDE = 0.5  # an object with this share of its area in another's box, and under this share of its area, is on it


@dataclass(slots=True, frozen=True)
class Carried:
    """An object inside a crop, carried along when the crop is pasted: its box relative to the crop
    (fractions of the crop's width and height)."""

    name: str
    attributes: tuple[str, ...]
    rel: tuple[float, float, float, float]


@dataclass(slots=True, frozen=True)
class Donor:
    """An object of some name in another image of the corpus: its crop is pasted by copy-paste backends,
    with its own looks (`attributes`) and the objects its crop holds (`carried`)."""

    image_id: str
    object_id: str
    box: Box
    attributes: tuple[str, ...] = ()
    carried: tuple[Carried, ...] = ()

    def to_json(self) -> dict[str, Any]:
        held = [{"name": c.name, "attributes": list(c.attributes), "rel": list(c.rel)} for c in self.carried]
        return {"image_id": self.image_id, "object_id": self.object_id, "box": list(self.box),
                "attributes": list(self.attributes), "carried": held}  # fmt: skip

    @classmethod
    def from_json(cls, x: dict[str, Any]) -> Donor:
        held = tuple(Carried(c["name"], tuple(c["attributes"]), tuple(c["rel"])) for c in x.get("carried", ()))
        return cls(x["image_id"], x["object_id"], tuple(x["box"]), tuple(x.get("attributes", ())), held)  # type: ignore[arg-type]


def carried_by(graph: SceneGraph, box: Box, *exclude: str) -> tuple[Carried, ...]:
    """The objects of `graph` mostly inside `box` (but those named in `exclude`), relative to it."""
    x, y, w, h = box
    out = []
    for o in graph.objects.values():
        if o.id in exclude or o.area <= 0 or intersection(o.box, box) < CARRIED * o.area:
            continue
        x0, y0 = max(o.x, x), max(o.y, y)
        x1, y1 = min(o.x + o.w, x + w), min(o.y + o.h, y + h)
        out.append(Carried(o.name, o.attributes, ((x0 - x) / w, (y0 - y) / h, (x1 - x0) / w, (y1 - y0) / h)))
    return tuple(sorted(out, key=lambda c: (c.name, c.rel)))


def fitted(box: Box, size: tuple[int, int]) -> Box:
    """Where a crop of `size` (w, h) lands in `box`: fitted inside, aspect kept, bottom-centred (as the
    copy-paste backend places it)."""
    x, y, w, h = box
    s = min(w / max(size[0], 1), h / max(size[1], 1))
    nw, nh = max(1, min(w, round(size[0] * s))), max(1, min(h, round(size[1] * s)))
    return (x + (w - nw) // 2, y + h - nh, nw, nh)


def paste_fit(box: Box, size: tuple[int, int]) -> str | None:
    """Why a crop of `size` (w, h) cannot be pasted convincingly into `box`, or None."""
    _, _, w, h = box
    cw, ch = max(size[0], 1), max(size[1], 1)
    scale = min(w / cw, h / ch)
    if scale > MAX_UPSCALE:
        return f"the crop would be enlarged {scale:.1f}x (at most {MAX_UPSCALE}x)"
    cover = (cw * scale) * (ch * scale) / max(w * h, 1)
    if cover < MIN_COVER:
        return f"the crop, its shape kept, covers {cover:.0%} of the box (needs {MIN_COVER:.0%})"
    return None


def swap_refusal(a: SceneObject, b: SceneObject) -> str | None:
    """Why two objects' crops cannot be exchanged convincingly, or None: their boxes overlap (one crop
    holds the other, so the swap pastes each back over itself), or differ in size or shape."""
    shared = intersection(a.box, b.box)
    if shared > MAX_SWAP_OVERLAP * max(min(a.area, b.area), 1):
        return f"the boxes of {a.name} and {b.name} overlap ({shared / max(min(a.area, b.area), 1):.0%})"
    ratio = (max(a.area, b.area) / max(min(a.area, b.area), 1)) ** 0.5
    if ratio > MAX_SWAP_SCALE:
        return f"{a.name} and {b.name} differ {ratio:.1f}x in size (at most {MAX_SWAP_SCALE}x)"
    for x, y in ((a, b), (b, a)):
        if why := paste_fit(y.box, (x.w, x.h)):
            return f"{x.name} into the box of {y.name}: {why}"
    return None


def adds(carried: tuple[Carried, ...], into: Box, prefix: str) -> list[dict[str, Any]]:
    """`carried` objects placed into `into` (the fitted crop's box in the edited image), for `adds`."""
    x, y, w, h = into

    def box(r: tuple[float, float, float, float]) -> list[int]:
        return [x + round(r[0] * w), y + round(r[1] * h), max(1, round(r[2] * w)), max(1, round(r[3] * h))]

    return [
        {"id": f"{prefix}+{k}", "name": c.name, "attributes": list(c.attributes), "box": box(c.rel)}
        for k, c in enumerate(carried)
    ]


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
    types: tuple[str, ...] = field(default_factory=IMAGE_NEGATIVES.names)  # default: every registered kind
    # Which objects may be edited: the pipeline passes the target filter (no stuff such as "floor", no
    # box covering most of the image), so an edit never repaints the ground or pastes a sky into a cup.
    editable: Callable[[SceneObject, SceneGraph], bool] = lambda obj, graph: True
    max_options: int = 40
    max_flips_per_image: int = 2  # one mirrored photo under many expressions is one test, many times
    _certifier: Certifier | None = None

    @property
    def certifier(self) -> Certifier:
        if self._certifier is None:
            self._certifier = Certifier(self.words, self.table)
        return self._certifier

    def category(self, attribute: str) -> str | None:
        return self.table.category(attribute)


def prompt(attrs: tuple[str, ...], name: str) -> str:
    words = " ".join((*attrs, name))
    return f"a photo of {'an' if words[:1] in 'aeiou' else 'a'} {words}"


def inside_of(graph: SceneGraph | None, obj: SceneObject) -> tuple[Box, ...]:
    """The boxes of the graph's other objects lying in `obj`'s box (at least `INSIDE` of their area), smaller
    than `obj` (under `INSIDE` of its area) and not a second box of it: what sits on it or is drawn on it,
    which a recolour of `obj` leaves out (a teddy bear on a pillow)."""
    if graph is None:
        return ()
    out = []
    for o in graph.objects.values():
        if o.id == obj.id or o.area <= 0 or o.area >= INSIDE * obj.area:
            continue
        if intersection(o.box, obj.box) >= INSIDE * o.area:
            out.append(o.box)
    return tuple(sorted(out))


def on_it(regions: tuple[EditRegion, ...]) -> dict[str, list]:
    """The record of the objects each recoloured region leaves out (`"inside"`: per region, its boxes), so
    the `edits` filter judges the mask the backend edited; nothing when none is."""
    if not any(r.inside for r in regions):
        return {}
    return {"inside": [[list(b) for b in r.inside] for r in regions]}


def attribute_region(
    box: Box, new: str, category: str, name: str, old: str | None = None, inside: tuple[Box, ...] = ()
) -> EditRegion:
    if category == "color":
        return EditRegion(box, "recolor", prompt((new,), name), color=new, source_color=old, inside=inside)
    return EditRegion(box, "replace", prompt((new,), name))


def crop(image: Image.Image, box: Box) -> Image.Image:
    x, y, w, h = box
    return image.crop((x, y, x + w, y + h))


def falsified(path: PathNode, graph: SceneGraph, edit: dict[str, Any], certifier: Certifier) -> str | None:
    """None when the edited picture certainly makes `path` false; else why it may still be true."""
    try:
        edited = apply_edit(graph, edit)
    except ValueError as e:
        return f"the edit does not apply: {e}"
    return certifier.nothing(path.without_ids(), edited)


def swap_names_edit(
    a: SceneObject, b: SceneObject, ctx: ImageContext, graph: SceneGraph | None = None, copies: bool = True
) -> dict:
    """The swap of two objects as the pixels show it: names exchange and what the boxes decide stays; a
    copy-paste backend (`copies`) moves each crop's looks and whatever else it holds (`graph` given) along,
    while a generative one paints a bare name whose looks nobody knows."""

    def own(o: SceneObject) -> tuple[str, ...]:
        return tuple(x for x in o.attributes if x not in looks(o.attributes, ctx.category))

    def moved(o: SceneObject) -> tuple[str, ...]:
        return looks(o.attributes, ctx.category) if copies else ()

    edit: dict[str, Any] = {
        "op": "swap_names",
        "objects": [a.id, b.id],
        "attributes": [list(dict.fromkeys((*own(a), *moved(b)))), list(dict.fromkeys((*own(b), *moved(a))))],
    }
    if graph is not None:
        moved = adds(carried_by(graph, b.box, a.id, b.id), fitted(a.box, (b.w, b.h)), a.id) + adds(
            carried_by(graph, a.box, a.id, b.id), fitted(b.box, (a.w, a.h)), b.id
        )
        if moved:
            edit["adds"] = moved
    return edit


def name_options(site: Site, obj: SceneObject, ctx: ImageContext) -> tuple[str, ...]:
    """Corpus names of the site's category that contradict the object's, most frequent first."""
    pool = [m for m in ctx.vocab["names"] if ctx.words.name_category(m) == site.category and m != obj.name]
    return tuple(m for m in pool if ctx.words.names_contradict(obj.name, m)[0])


def attribute_options(site: Site, obj: SceneObject, ctx: ImageContext) -> tuple[str, ...]:
    """Corpus attributes of the site's category, most frequent first, never one the object has: each
    contradicts the one the path names and every one of that category the object already has."""
    pool = [b for b in ctx.vocab["attributes"] if ctx.table.category(b) == site.category and b not in obj.attributes]
    return tuple(
        b
        for b in pool
        if ctx.words.attributes_contradict(site.word or "", b)[0]
        and all(
            ctx.words.attributes_contradict(a, b)[0] for a in obj.attributes if ctx.table.category(a) == site.category
        )
    )


_PLACEHOLDER = Image.new("RGB", (1, 1))


def fitting_donors(word: str, obj: SceneObject, graph: SceneGraph, ctx: ImageContext) -> list[Donor]:
    """Donors of `word` from other images whose crop pastes convincingly into `obj`'s box."""
    return [
        d
        for d in ctx.donors.get(word, [])
        if d.image_id != graph.image_id and paste_fit(obj.box, (d.box[2], d.box[3])) is None
    ]


def attribute_renderable(
    site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
) -> bool:
    """Whether `attribute_edit` can render `word`."""
    return backend.supports(attribute_region(obj.box, word, site.category, obj.name))  # type: ignore[arg-type]


def rename_renderable(
    site: Site, obj: SceneObject, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str
) -> bool:
    """Whether `rename_edit` can render `word`, without reading any donor image."""
    has_donor = bool(fitting_donors(word, obj, graph, ctx))
    return backend.supports(EditRegion(obj.box, "replace", prompt((), word), donor=_PLACEHOLDER if has_donor else None))


class DonorUnreadable(Exception):
    """A donor crop could not be read: the word is not renderable by copy-paste (never a silent removal)."""


class PasteRefused(Exception):
    """The backend refused every donor tried for a word (`InpaintBackend.refusal`): it is not rendered."""


DONOR_TRIES = 3  # donors of a word tried, in a keyed order, before the word is given up


def backend_refusal(backend: InpaintBackend, image: Image.Image | None, region: EditRegion) -> str | None:
    """The backend's reason not to paint `region` (None without an image or a backend that judges nothing)."""
    judge = getattr(backend, "refusal", None)
    return None if image is None or judge is None else judge(image, region)


def attribute_edit(
    site: Site,
    obj: SceneObject,
    graph: SceneGraph,
    ctx: ImageContext,
    backend: InpaintBackend,
    word: str,
    image: Image.Image | None = None,
) -> ImageEdit | None:
    """The object's attribute `site.word` repainted as `word`; None when the backend cannot render it. Raises
    `PasteRefused` when the backend judges (on the source `image`) that it would not look like a photograph."""
    region = attribute_region(obj.box, word, site.category, obj.name, site.word, inside_of(graph, obj))  # type: ignore[arg-type]
    if not backend.supports(region):
        return None
    if why := backend_refusal(backend, image, region):
        raise PasteRefused(f"recolour of {obj.name} to {word}: {why}")
    edit = {"op": "set_attribute", "object": obj.id, "from": site.word, "to": word, **on_it((region,))}
    return ImageEdit(site, edit, (region,))


def rename_edit(
    site: Site,
    obj: SceneObject,
    graph: SceneGraph,
    ctx: ImageContext,
    backend: InpaintBackend,
    word: str,
    image: Image.Image | None = None,
) -> ImageEdit | None:
    """The object painted over as `word`; None when the backend cannot render it. Raises `DonorUnreadable`
    when the donor image it needs cannot be read, `PasteRefused` when the backend judges (on the source
    `image`) that no donor tried would look like a photograph."""
    # a donor of the new name from another image (copy-paste backends), or the prompt painted (generative
    # ones). Never a removal in its place: that is `remove_object`, its own kind.
    own = tuple(a for a in obj.attributes if a not in looks(obj.attributes, ctx.category))  # what the box decides
    keep_attrs = tuple(a for a in obj.attributes if ctx.table.category(a) == "color")[:1]
    donors = fitting_donors(word, obj, graph, ctx)
    random.Random(keyed_seed(ctx.seed, "donor", graph.image_id, obj.id, word)).shuffle(donors)
    donor, pick, refused = None, None, []
    for d in donors[:DONOR_TRIES]:
        try:
            with Image.open(image_file(ctx.images_dir, d.image_id)) as im:
                cut = crop(im.convert("RGB"), d.box)
        except (OSError, SyntaxError, ValueError) as e:
            raise DonorUnreadable(f"donor image {d.image_id}.jpg for {word!r} unreadable: {e}") from e
        why = backend_refusal(backend, image, EditRegion(obj.box, "replace", prompt(keep_attrs, word), donor=cut))
        if why is None:
            donor, pick = cut, d
            break
        refused.append(why)
    if refused and donor is None:
        raise PasteRefused(f"{obj.name} -> {word}: every donor tried was refused ({refused[0]})")
    region = EditRegion(obj.box, "replace", prompt(keep_attrs, word), donor=donor)
    if backend.supports(region):
        edit: dict[str, Any] = {"op": "rename", "object": obj.id, "name": word}
        if pick is not None and getattr(backend, "copies_donors", True):
            # the donor's own looks, and whatever its crop holds, come along; `donor` says which it was
            edit["donor"] = {"image_id": pick.image_id, "object": pick.object_id}
            edit["attributes"] = list(dict.fromkeys((*own, *looks(pick.attributes, ctx.category))))
            if pick.carried:
                edit["adds"] = adds(pick.carried, fitted(obj.box, (pick.box[2], pick.box[3])), obj.id)
        else:  # a generative backend paints the prompt: the kept colour, nothing else
            edit["attributes"] = list(dict.fromkeys((*own, *keep_attrs)))
        return ImageEdit(site, edit, (region,))
    return None


def save_like_source(image: Image.Image, path: Path, source: tuple[Any, int]) -> None:
    """JPEG with the source's quantisation tables and subsampling, so scores compare like with like;
    a source that is not a JPEG gets quality 95."""
    qtables, sampling = source
    if qtables:
        image.save(path, "JPEG", qtables=qtables, subsampling=sampling if sampling != -1 else 0)
    else:
        image.save(path, "JPEG", quality=95)
