"""The inpainting role: edit boxes of an image into N candidate negative images.

Implementations: `backends.inpaint_opencv.OpenCVInpainter` (offline, the demo's: GrabCut recolouring,
copy-paste of a donor object, Telea removal) and `backends.inpaint_diffusers.DiffusersInpainter`
(Stable Diffusion inpainting through diffusers, with a PowerPaint mode). Generators only see this
protocol. Every candidate is full size, with the source pasted back outside the dilated edit boxes, so
later similarity and realism scores compare like with like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from PIL import Image

RegionOp = Literal["recolor", "replace", "remove"]


@dataclass(frozen=True, slots=True)
class EditRegion:
    """One box to change.

    - "recolor": make the object in `box` the colour `color` (a GQA colour name), keeping its shape;
      `source_color` names its current colour, so a backend recolours the right part;
    - "replace": put `prompt`'s object in `box` ("a red cup", "a bowl"); `donor`, when given, is an RGB
      crop of a real object of that kind from another image (copy-paste backends need it);
    - "remove": fill `box` with background (`prompt` may describe it).
    """

    box: tuple[int, int, int, int]  # xywh in the source image's pixels
    op: RegionOp
    prompt: str
    color: str | None = None
    donor: Image.Image | None = None
    source_color: str | None = None  # "recolor": the colour the object has now, when the graph says
    # "recolor": the boxes (xywh) of other annotated objects lying inside `box` (a teddy bear on the
    # pillow): their pixels are not this object's, so a backend leaves them out of the recolour
    inside: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class InpaintJob:
    key: str  # stable id of the negative; with `seed` it fixes the candidates
    image: Image.Image  # the RGB source
    regions: tuple[EditRegion, ...]  # applied in order (a swap has two)
    n: int  # candidates to return
    seed: int


@dataclass(frozen=True, slots=True)
class Rect:
    """A pixel rectangle [x0, x1) x [y0, y1) inside an image (the backends' working windows)."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def w(self) -> int:
        return self.x1 - self.x0

    @property
    def h(self) -> int:
        return self.y1 - self.y0

    def grow(self, px: int, width: int, height: int) -> Rect:
        return Rect(max(0, self.x0 - px), max(0, self.y0 - px), min(width, self.x1 + px), min(height, self.y1 + px))

    def slices(self) -> tuple[slice, slice]:
        return slice(self.y0, self.y1), slice(self.x0, self.x1)


class InpaintBackend(Protocol):
    version: str
    copies_donors: bool  # a "replace" pastes its donor crop as it is (its looks are what the picture shows)

    def supports(self, region: EditRegion) -> bool:
        """Whether this backend can perform the region's edit (opencv cannot make "a wooden cup")."""
        ...

    def refusal(self, image: Image.Image, region: EditRegion, seed: int = 0) -> str | None:
        """Why this backend would not render `region` of `image` convincingly, known before painting (a
        copy-paste donor that would leave most of the old object to be smeared), or None."""
        ...

    def run(self, jobs: Sequence[InpaintJob]) -> list[list[Image.Image]]:
        """`job.n` RGB candidates per job, each the source's size, unchanged outside the dilated boxes."""
        ...
