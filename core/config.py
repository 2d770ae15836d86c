"""Run configuration: one validated YAML file (configs/demo.yaml is the embedded default).

Unknown keys and bad values fail with a message naming the key, so a typo never silently runs the
default.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal, get_args

import orjson
from pydantic import Field, ValidationError, field_validator, model_validator

from hardneg.core.config_exports import ExportsConfig
from hardneg.core.config_files import Strict as _Strict
from hardneg.core.config_files import describe_errors, dotted_value, find_config, merge, read_layers
from hardneg.core.errors import ConfigError
from hardneg.core.gqa.stream import DEFAULT_LIMITS, MAX_PARSEABLE_DEPTH
from hardneg.core.ids import id_problem
from hardneg.core.plugins import INPAINT_BACKENDS, LANGUAGE_BACKENDS, TEXT_NEGATIVES, known
from hardneg.core.resources import bundled_dir, data_path

DEFAULT_CONFIG = bundled_dir("configs") / "demo.yaml"

PathType = Literal["0_hop", "1_hop", "and", "2_hop", "same_attr", "same_attr_2hop"]
ALL_PATH_TYPES: tuple[str, ...] = ("0_hop", "1_hop", "and", "2_hop", "same_attr", "same_attr_2hop")


class InputsConfig(_Strict):
    scene_graphs: Path | None = None  # a GQA *_sceneGraphs.json or a folder of them; None = the demo world
    images: Path | None = None  # folder of <image_id>.jpg; None = do not check images
    # Before anything starts, the first `images_checked` images the graphs name are looked for in `images`:
    # fewer than `min_images_present` of them there is a wrong folder, refused at once (not an empty run).
    images_checked: int = Field(200, ge=1)
    min_images_present: float = Field(0.5, ge=0.0, le=1.0)
    # Per-image limits (core/gqa/stream.py `GraphLimits`): an image past one is rejected at ingest with the
    # limit named, and the run goes on. Real GQA graphs stay far below (docs/running.md).
    max_objects: int = Field(DEFAULT_LIMITS.max_objects, ge=1)
    max_relations: int = Field(DEFAULT_LIMITS.max_relations, ge=0)  # in the graph, as listed
    max_attributes: int = Field(DEFAULT_LIMITS.max_attributes, ge=0)  # on one object
    max_depth: int = Field(DEFAULT_LIMITS.max_depth, ge=5, le=MAX_PARSEABLE_DEPTH)  # nesting inside a graph (GQA's: 5)
    max_graph_bytes: int = Field(DEFAULT_LIMITS.max_graph_bytes, ge=1)  # one image's JSON


class DemoConfig(_Strict):
    n_scenes: int = Field(40, ge=1, le=100_000)
    seed: int = 0


class SplitsConfig(_Strict):
    train: float = Field(0.8, ge=0.0, le=1.0)
    val: float = Field(0.1, ge=0.0, le=1.0)
    test: float = Field(0.1, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitsConfig:
        total = self.train + self.val + self.test
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"split proportions must sum to 1, got {total:g}")
        return self

    def items(self) -> list[tuple[str, float]]:
        return [("train", self.train), ("val", self.val), ("test", self.test)]


class TargetsConfig(_Strict):
    min_area_frac: float = Field(0.002, ge=0.0, le=1.0)  # of the image; smaller targets are unreadable
    min_side: int = Field(8, ge=0)  # px; a sliver is not a referent even if its area passes
    max_area_frac: float = Field(0.8, gt=0.0, le=1.0)  # a box covering most of the image is the scene
    poor_referents: Path = Path("templates/poor_referents.v1.yaml")


class PathsConfig(_Strict):
    types: list[PathType] = Field(default_factory=lambda: list(ALL_PATH_TYPES))
    max_target_attributes: int = Field(2, ge=0, le=4)  # attributes on the target node
    max_related_attributes: int = Field(1, ge=0, le=3)  # attributes on each related node
    per_target_type: int = Field(1, ge=1)  # unique paths kept per (target, type)
    # candidates looked at past those kept, per (target, type), for one that allows rarer negatives (a swap of
    # attributes: two of its objects described in one category; else a swap of objects or a replaced relation:
    # no crowd name among its objects), which then takes the place of one that allows fewer; 0: the first found
    negatives_lookahead: int = Field(64, ge=0)
    max_per_image: int = Field(24, ge=1)  # positives kept per image before balancing
    max_candidates: int = Field(2000, ge=1)  # enumeration bound per (target, type): counts, never time
    # work bound on one image's search, in steps (generators/paths/budget.py): a crowd of one name stops
    # here, counted in the paths stage's `budget_exhausted`; real images use a small share of it
    max_image_steps: int = Field(5_000_000, ge=1)
    same_categories: list[str] = Field(default_factory=lambda: ["color", "material", "size", "shape", "pattern"])
    relations: Path = Path("templates/relations.v1.yaml")
    templates: Path = Path("templates/expressions.v1.yaml")
    english: Path = Path("templates/english.v1.yaml")
    box_shapes: Path = Path("templates/box_shapes.v1.json")  # names' usual boxes (core/gqa/boxes.py)
    # rules a careful annotator applies, each switchable to measure what it removes:
    # crowd_targets: a crowd/background name (trees, windows, grass) is never a target; crowd_anchors: a path that
    # needs a relation to tell its target apart never rests on a crowd name; name_chains: no name three times in a
    # path, nor a related object of the target's name in a crowd of it; size_across_categories: same_attr on size
    # only between objects of one name category; repeated_conjuncts: no `and` whose two branches read the same
    # ("right of a banana and right of a banana"); the rest: generators/paths/annotation_rules.py
    rules: list[str] = Field(default_factory=lambda: list(PATH_RULES))
    # many_held: a name seen several at a time in this share of the images holding it (run and prior) is not
    # told apart by the roomy thing it lies on or in ("the paper on the cork-board"); 1.0: never
    many_held_share: float = Field(0.2, ge=0.0, le=1.0)

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, v: list[str]) -> list[str]:
        unknown = sorted(set(v) - set(PATH_RULES))
        if unknown:
            raise ValueError(f"unknown path rule {unknown[0]!r}; known: {', '.join(PATH_RULES)}")
        return v

    @field_validator("types")
    @classmethod
    def _no_duplicates(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v) or not v:
            raise ValueError("types must be a non-empty list without repeats")
        return v


PATH_RULES = ("crowd_targets", "crowd_anchors", "name_chains", "size_across_categories", "repeated_conjuncts",
              "many_targets", "many_held", "several_wholes", "printed_targets", "same_kind",
              "other_wearers", "self_related")  # fmt: skip


class HygieneConfig(_Strict):
    """Scene-graph hygiene before any path: what is merged or dropped, each counted with a reason."""

    merge_iou: float = Field(0.7, gt=0.0, le=1.0)  # two same-kind annotations overlapping this much are one object
    drop_contradicted_spatial: bool = True  # a stored left/right/above/below edge the boxes contradict is dropped
    drop_person_attributes: bool = True  # no colour, skin, ethnicity or body word on a person noun
    spatial_from_boxes: bool = True  # left/right edges between objects side by side, as GQA stores them


class BalanceConfig(_Strict):
    """Caps applied in a seeded random order over all candidates; null means no cap."""

    per_type_level: int | None = Field(None, ge=1)
    per_relation: int | None = Field(None, ge=1)  # samples using a relation name (GQA: left/right dominate)
    per_target_name: int | None = Field(None, ge=1)


JsonMode = Literal["json_object", "json_schema", "none"]


class OpenAIConfig(_Strict):
    """An OpenAI-compatible endpoint. The key is read from the env var `api_key_env`, never stored. The
    backend's settings (`backends/openai_settings.py`) extend this model: its defaults and checks are theirs."""

    base_url: str | None = None  # None = the OPENAI_BASE_URL env var
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"  # unset means a local server that needs no key
    timeout_s: float = Field(30.0, gt=0)  # per HTTP request
    max_retries: int = Field(4, ge=0)  # transport retries per call: 429, 5xx, timeouts, connection errors
    max_attempts: int = Field(3, ge=1)  # answers that fail validation are asked again this many times in all
    # a server whose answers are this many in a row empty or not in the asked form is no language model:
    # the stage stops (exit 3, naming the server and what it answered) instead of rejecting every sample
    max_unusable_in_a_row: int = Field(25, ge=1)
    # a stage that ends with more of its answers unusable than this says so (terminal, stats.md, report)
    warn_unusable_share: float = Field(0.5, ge=0.0, le=1.0)
    concurrency: int = Field(4, ge=1, le=256)
    temperature: float = Field(0.7, ge=0.0, le=2.0)  # of the first attempt
    json_mode: JsonMode = "json_object"
    cache: Path | None = None  # SQLite response cache; None = <run>/work/llm_cache.sqlite
    rewrite_prompt: str = "rewrite.v1.md"
    replace_prompt: str = "replace.v2.md"


class LanguageConfig(_Strict):
    backend: str = "lexicon"  # a registered language backend (backends/): lexicon (offline), openai (any server)
    rewrite_positives: bool = True
    rewrite_negatives: bool = False  # a rewrite of a negative is validated against its altered path
    negatives_per_positive: int = Field(3, ge=0)  # candidates; refinement and the type mix (negative_mix) choose
    # kinds of text negative by name (generators/text/types.py, or any registered kind); default: every one
    negative_types: list[str] = Field(default_factory=lambda: list(TEXT_NEGATIVES.names()))
    max_rounds: int = Field(3, ge=1)  # replace sites tried per positive, one backend batch per round
    n_replacements: int = Field(5, ge=1, le=20)
    # text negatives one replace site may make, each with another word ("the cup" -> "the bowl", "the plate"),
    # while the positive has room: refinement and the type mix choose among them
    words_per_site: int = Field(2, ge=1, le=20)
    # a name whose usual box is under this share of the image is overlooked more often than boxed: seen often
    # beside one of the image's names it is likely there, and no replacement names it (0: no name is small)
    small_unannotated: float = Field(0.03, ge=0.0, le=1.0)
    # a replacement name annotated with the image's names at under e^scene_fit of its usual rate (the mean of the
    # log lifts) is foreign to the scene and left out: an airplane in a street (-1.4), a bed in a kitchen; null: off
    scene_fit: float | None = -1.0
    # ... or, under e^-0.5 of its usual rate there, fitting them e^replacement_fit times less than the name it replaces
    # (a giraffe for a dog; real same-category pairs: 1 in 1,000 that far apart, benchmarks/scene_fit.py); null: off
    replacement_fit: float | None = Field(1.0, ge=0.0)
    lexicon: Path = Path("templates/lexicon.v1.yaml")
    openai: OpenAIConfig = OpenAIConfig()

    _known_backend = field_validator("backend")(known(LANGUAGE_BACKENDS))
    _known_types = field_validator("negative_types")(known(TEXT_NEGATIVES))


class RefineConfig(_Strict):
    """SugarCREPE adversarial refinement of text negatives."""

    enabled: bool = True
    # two blind scorers: a fluency LM fit on the positives, and the corpus's plausibility of the facts
    scorers: list[dict[str, Any]] = Field(default_factory=lambda: [{"kind": "ngram"}, {"kind": "plausibility"}])
    bins_2d: int = Field(50, ge=2, multiple_of=2)  # at most; half the bins per sign (filters/refine.py)
    bins_1d: int = Field(10, ge=2, multiple_of=2)
    # each negative type and level is balanced on its own, its grid pooled so that a cell expects this many
    # pairs (a few hundred pairs on a 50 x 50 grid leave nearly every mirror cell empty); 0: the fixed grid
    min_per_cell: int = Field(5, ge=0)

    @field_validator("scorers")
    @classmethod
    def _two_scorers(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(v) != 2 or not all(isinstance(s, dict) and "kind" in s for s in v):
            raise ValueError("refine needs exactly two scorers, each a mapping with a 'kind'")
        return v


def default_shares() -> dict[str, float]:
    """Each registered kind's `mix_weight` (the paper's kinds: their counts in FineCops-Ref's test split),
    normalised and rounded to 4 places."""
    weights = {name: cls.mix_weight for name, cls in TEXT_NEGATIVES.items()}
    return {t: round(w / sum(weights.values()), 4) for t, w in weights.items()}


class NegativeMixConfig(_Strict):
    """The mix of text negative types the splits aim at (filters/mix.py), applied after refinement by the
    decide stage: `hardneg split` may change it."""

    # target shares by type (normalised over `language.negative_types`); default: the paper's test split
    shares: dict[str, float] = Field(default_factory=default_shares)
    per_positive: float = Field(1.0, ge=0.0)  # text negatives emitted per positive at most
    min_per_positive: float = Field(0.8, ge=0.0)  # lifting a scarce type never thins below this many per positive
    # a type below this fraction of its share is lifted by thinning the others, and reported where it stays
    # below (stats.md, the run summary); 0: never thin for the mix
    floor: float = Field(0.5, ge=0.0, le=1.0)
    # spread (filters/mix.py): at most this many about one set of objects (a positive's path's objects), and
    # this many per positive of an image (rounded up); None: no such cap. Above `per_positive`: an image rich in
    # negatives makes up for one with none (the total is still capped), but no photo fills the benchmark
    per_object_set: int | None = Field(3, ge=1)
    per_image: float | None = Field(1.5, gt=0.0)

    @field_validator("shares")
    @classmethod
    def _positive_shares(cls, v: dict[str, float]) -> dict[str, float]:
        for name in v:
            TEXT_NEGATIVES.get(name)
        if any(not (x >= 0) for x in v.values()) or not any(x > 0 for x in v.values()):
            raise ValueError("shares must be non-negative with at least one above 0")
        return v


class ReviewConfig(_Strict):
    """What a run publishes of the human filter (`hardneg review`)."""

    publish_annotators: bool = False  # False: published files name annotators "annotator 1", "annotator 2", ...


class PriorConfig(_Strict):
    """Counts of real scene graphs that a run's own counts are added to (core/gqa/prior.py): attestation,
    absurd swaps, refinement's plausibility scorer and what the corpus says about annotations read the sum."""

    file: Path = Path("templates/prior.v2.json")
    weight: float = Field(1000.0, ge=0.0)  # the prior speaks as this many images; 0: the run's counts alone


class RiskConfig(_Strict):
    """Positives' risk (generators/paths/annotation_rules.py, filters/evidence.py): `max` drops those above it, at
    every level (None: flag only); those of `drop_levels` whose twin or box risk reaches `drop_twin`/`drop_box` are
    dropped (None: flag only)."""

    max: float | None = Field(0.6, ge=0.0, le=1.0)  # two independent doubts, or a colour twin the photo shows
    drop_levels: list[int] = Field(default_factory=lambda: [2, 3])
    drop_twin: float | None = Field(0.4, ge=0.0, le=1.0)
    drop_box: float | None = Field(0.5, ge=0.0, le=1.0)


PixelRule = Literal["colour_contradicted", "multicoloured", "same_colour_contradicted", "colour_still_true"]


class PixelsConfig(_Strict):
    """The photo as evidence (core/pixels/claims.py); `drop`: the rules that drop a sample (`split` may change)."""

    enabled: bool = True
    twin_search: bool = True  # look for another region like the target (core/pixels/twins.py)
    drop: list[PixelRule] = Field(default_factory=lambda: list(get_args(PixelRule)))


SplitName = Literal["train", "val", "test"]


class DiffusersConfig(_Strict):
    """The diffusers inpainting backend; its settings (`backends/inpaint_diffusers.py`) extend this model."""

    # hub id or local folder of an inpainting pipeline (9-channel UNet); weights are never downloaded here
    model: str = "runwayml/stable-diffusion-inpainting"
    mode: Literal["sd", "powerpaint"] = "sd"  # plain prompts, or PowerPaint v1's task words in them
    steps: int = Field(30, ge=1)  # denoising steps (times the backend's `strength` are run)
    guidance_scale: float = 7.5  # classifier-free guidance; <= 1 turns it off
    batch_size: int = Field(4, ge=1)  # candidates per pipeline call
    dilate_px: int = Field(8, ge=0)  # px the box grows by: the mask and the paste-back region (the object's rim)
    # px of context around the dilated box the model sees, at full model resolution; None = the whole image,
    # scaled so its long side is the model resolution
    padding_mask_crop: int | None = Field(32, ge=0)


class ImagesConfig(_Strict):
    """Negative images. The paper makes them for the test split only."""

    enabled: bool = True
    backend: str = "opencv"  # a registered inpainting backend (backends/): opencv (offline), diffusers
    splits: list[SplitName] = Field(default_factory=lambda: ["test"])
    # kinds of negative image by name (generators/images/types.py), any registered one; None: the backend's
    # defaults (diffusers: the paper's five; opencv: the kinds whose edits are verified, docs/image_negatives.md)
    types: list[str] | None = None
    per_positive: int = Field(1, ge=0)
    candidates: int = Field(10, ge=1, le=64)  # per negative; the filters keep one
    max_rounds: int = Field(3, ge=1)
    donors_per_name: int = Field(20, ge=1)  # copy-paste donors kept per object name, largest boxes first
    max_flips_per_image: int = Field(2, ge=0)  # positives of one photo that may get its mirror image
    opencv_dilate_px: int = Field(6, ge=0)
    diffusers: DiffusersConfig = DiffusersConfig()

    _known_backend = field_validator("backend")(known(INPAINT_BACKENDS))


class FiltersConfig(_Strict):
    """Score first, decide later. `scorers` says which registered filters run and with what
    (models, options): changing it re-scores. `thresholds` decides from the stored scores: `hardneg split`
    may change it without loading a model. Each filter's keys are checked by `filters/registry.py`."""

    # ssim ranks a negative's candidates, seam scores realism, edits verifies each edit in the pixels
    scorers: dict[str, dict[str, Any]] = Field(default_factory=lambda: {"ssim": {}, "seam": {}, "edits": {}})
    thresholds: dict[str, dict[str, Any]] = Field(default_factory=dict)  # name -> its thresholds
    batch_size: int = Field(16, ge=1)


class DaskConfig(_Strict):
    """`task_runner: dask` (flows/runners.py): one Prefect task per shard on a Dask cluster."""

    address: str | None = None  # a running scheduler, e.g. tcp://head:8786; None = a local cluster of `workers`
    gpus: list[int] = Field(default_factory=list)  # local cluster: one worker per GPU id, pinned to it
    gpu_resource: bool = False  # GPU stages need a worker started with `--resources GPU=1` (implied by gpus)


class RunConfig(_Strict):
    name: str | None = None  # run folder name under outputs/; None = derived from the config hash
    seed: int = 0
    shard_size: int = Field(1000, ge=1)  # images per Prefect task
    task_runner: Literal["thread", "process", "dask"] = "thread"  # "process" uses every core; "dask" many machines
    workers: int = Field(2, ge=1, le=256)
    # stages that read none of each other run at once on the workers (`Run.waves`): faster, and their memory
    # peaks add up; false runs one stage at a time
    concurrent_stages: bool = True
    dask: DaskConfig = DaskConfig()
    inputs: InputsConfig = InputsConfig()
    demo: DemoConfig = DemoConfig()
    attribute_table: Path = Path("templates/attribute_categories.json")
    splits: SplitsConfig = SplitsConfig()
    targets: TargetsConfig = TargetsConfig()
    hygiene: HygieneConfig = HygieneConfig()
    prior: PriorConfig = PriorConfig()
    paths: PathsConfig = PathsConfig()
    balance: BalanceConfig = BalanceConfig()
    # the sections whose defaults name registered plugins are made on use: the plugins import this module
    language: LanguageConfig = Field(default_factory=LanguageConfig)
    refine: RefineConfig = RefineConfig()
    negative_mix: NegativeMixConfig = Field(default_factory=NegativeMixConfig)
    risk: RiskConfig = RiskConfig()
    pixels: PixelsConfig = PixelsConfig()
    review: ReviewConfig = ReviewConfig()
    images: ImagesConfig = Field(default_factory=ImagesConfig)
    filters: FiltersConfig = FiltersConfig()
    exports: ExportsConfig = Field(default_factory=ExportsConfig)  # the other benchmark shapes (core/config_exports.py)

    @field_validator("name")
    @classmethod
    def _plain_folder_name(cls, v: str | None) -> str | None:
        """A folder name inside outputs/, never a path out of it (`../../x`, `/abs`)."""
        if v is not None and (why := id_problem(v, "name")) is not None:
            raise ValueError(f"{why}: it names the run folder under outputs/; use --output for a path")
        return v

    def resolve(self, p: Path) -> Path:
        """A data path of this config as a real file (`hardneg.core.resources.data_path`)."""
        return data_path(p)

    def fingerprint(self, *sections: str) -> str:
        """A hash of the named sections (all when none): a stage's work is reusable iff it matches."""
        data = self.model_dump(mode="json")
        if sections:
            data = {k: data[k] for k in sections}
        return hashlib.sha1(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Load and validate a config: the file over its `base` chain (`core/config_files.py`; default: the
    bundled demo config), then `overrides` (nested dicts: CLI flags) on top."""
    p = find_config(path) if path is not None else DEFAULT_CONFIG
    raw, _ = read_layers(p)
    merge(raw, overrides or {})
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"config {p} is invalid: {describe_errors(e, RunConfig)}") from None


def apply_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """`cfg` with nested `overrides` merged on top, validated like a config file."""
    raw = cfg.model_dump(mode="json")
    merge(raw, overrides)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"overrides are invalid: {describe_errors(e, RunConfig)}") from None


def config_value(cfg: RunConfig, dotted: str) -> Any:
    """The JSON value of a dotted config key ("filters.scorers")."""
    return dotted_value(cfg.model_dump(mode="json"), dotted, "config")
