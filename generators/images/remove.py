"""Remove an object: the worked example of adding a kind of negative image (docs/extending.md).

The grounded object of a node is painted out (the backend's "remove" region: OpenCV Telea inpainting,
or a diffusers inpainting of the background). With the target gone (level 1), or the object a relation
needs (level 2), the expression describes something absent: the classic "absent object" hard negative.
The edit is `{"op": "remove", "object": ID}` (core/edits.py), re-checked like every other: the original
path must match nothing in the graph without that object. Nodes of a crowd of same-name objects are not
removed: removing one of several trees leaves the expression true of the others (the executor then
rejects the edit anyway).
"""

from __future__ import annotations

from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintBackend
from hardneg.core.plugins import IMAGE_NEGATIVES
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.generators.images.edits import ImageContext, ImageEdit
from hardneg.generators.images.types import ImageType
from hardneg.generators.text.sites import Site


@IMAGE_NEGATIVES.add("remove_object", order=70)
class RemoveObject(ImageType):
    label = "object removed"
    description = "an object painted out, so the expression names something absent"
    rarity = 1
    part = "object"

    def sites(self, shared: list[Site], path: PathNode, objects: list[SceneObject | None]) -> list[Site]:
        return [Site(self.name, 1 if i == 0 else 2, (i,)) for i, o in enumerate(objects) if o is not None]

    def edit(
        self,
        site: Site,
        objects: list[SceneObject | None],
        image: Image.Image,
        ctx: ImageContext,
        graph: SceneGraph | None = None,
        backend: InpaintBackend | None = None,
    ) -> ImageEdit | None:
        obj = objects[site.nodes[0]]
        assert obj is not None  # sites are only made for editable objects
        return ImageEdit(site, {"op": "remove", "object": obj.id}, (EditRegion(obj.box, "remove", "background"),))
