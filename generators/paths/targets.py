"""What a path may be about: the resources a path shard loads once, and which objects may be targets or
related objects (FineCops-Ref: drop tiny boxes, stuff and part names, boxes covering the whole image)."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.core.certify import Certifier
from hardneg.core.config import RunConfig
from hardneg.core.records import SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import English, PoorReferents, RelationVocab
from hardneg.generators.paths.expressions import Renderer, Templates

GENERATOR = "paths@v12"  # v2: the box rule reads every spelling of a direction; v3: refused:* once per hop
# choice; v4: the per-image cap keeps candidates that allow a swap of attributes first; v5: the annotation
# rules and each positive's risk (generators/paths/annotation_rules.py); v6: of the paths of one (target, type), one
# that allows rarer negatives; v7: same-kind uniqueness, box shapes; v8: the other_wholes risk, groups left
# unannotated (many_held, several_wholes), attributes said after the noun ("the walk sign that is on"); v9:
# other_wholes also where no one is annotated but other clothes are; the own_kind risk; v10: other_wearers; v11: no
# twin on one who wears a kind of its name (a polo shirt for a shirt); v12: self_related

# what `PathResources.load` reads of the config: a stage that loads them (to word, check or render a path)
# declares these, so a changed template or rule redoes it (the keys, and the files' contents)
RENDERER_CONFIG = ("attribute_table", "targets.poor_referents", "paths.english", "paths.relations", "paths.rules",
                   "paths.templates")  # fmt: skip
RENDERER_DATA = ("attribute_table", "targets.poor_referents", "paths.relations", "paths.templates", "paths.english")


@dataclass(slots=True, frozen=True)
class PathResources:
    """Everything a path shard needs, loaded once per task."""

    table: AttributeTable
    poor: PoorReferents
    relations: RelationVocab
    english: English
    renderer: Renderer
    words: Words
    rules: frozenset[str]  # paths.rules in force
    # one per shard: its caches hold word facts (which names could be one object), the same in every image,
    # so a per-image certifier answered the same questions again image after image
    certifier: Certifier

    @classmethod
    def load(cls, cfg: RunConfig) -> PathResources:
        table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
        relations = RelationVocab.load(cfg.resolve(cfg.paths.relations))
        english = English.load(cfg.resolve(cfg.paths.english))
        templates = Templates.load(cfg.resolve(cfg.paths.templates))
        words = Words.load()
        return cls(
            table=table,
            poor=PoorReferents.load(cfg.resolve(cfg.targets.poor_referents)),
            relations=relations,
            english=english,
            renderer=Renderer(templates, english, relations, table, words),
            words=words,
            rules=frozenset(cfg.paths.rules),
            certifier=Certifier(words, table),
        )

    def versions(self) -> dict[str, str]:
        return {
            "generator": GENERATOR,
            "templates": f"templates@{self.renderer.templates.version}",
            "attribute_table": self.table.version,
            "poor_referents": self.poor.version,
            "relations": self.relations.version,
            "english": self.english.version,
            "words": self.words.version,
        }


# --------------------------------------------------------------------------------------------------
# Filtering targets and related objects


def box_reason(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, as_target: bool) -> str | None:
    t = cfg.targets
    image_area = graph.width * graph.height
    if obj.w < t.min_side or obj.h < t.min_side:
        return f"box side below {t.min_side}px ({obj.w}x{obj.h})"
    if obj.area < t.min_area_frac * image_area:
        return f"box area {obj.area / image_area:.4f} of the image is below {t.min_area_frac}"
    if as_target and obj.area > t.max_area_frac * image_area:
        return f"box covers {obj.area / image_area:.2f} of the image, above {t.max_area_frac}"
    return None


def target_reason(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, res: PathResources) -> str | None:
    if obj.name in res.poor.reasons:
        return f"poor referent name {obj.name!r} ({res.poor.reasons[obj.name]})"
    if (why := res.words.not_object_reason(obj.name)) is not None:
        return f"not an object: {obj.name!r} ({why})"
    if "crowd_targets" in res.rules and res.words.is_crowd(obj.name):
        return f"crowd name {obj.name!r} ({res.words.crowd_reason(obj.name)}): it cannot carry a uniqueness claim"
    return box_reason(obj, graph, cfg, as_target=True)


def related_ok(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, res: PathResources) -> bool:
    return obj.name not in res.poor.never_related and box_reason(obj, graph, cfg, as_target=False) is None
