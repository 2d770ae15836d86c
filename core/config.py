"""Run configuration: one validated YAML file (configs/demo.yaml is the embedded default).

Unknown keys and bad values fail with a message naming the key, so a typo never silently runs the
default.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.vocab import load_yaml_text

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = REPO_ROOT / "configs" / "demo.yaml"

PathType = Literal["0_hop", "1_hop", "and", "2_hop", "same_attr", "same_attr_2hop"]
ALL_PATH_TYPES: tuple[str, ...] = ("0_hop", "1_hop", "and", "2_hop", "same_attr", "same_attr_2hop")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputsConfig(_Strict):
    scene_graphs: Path | None = None  # a GQA *_sceneGraphs.json or a folder of them; None = the demo world
    images: Path | None = None  # folder of <image_id>.jpg; None = do not check images


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
    max_per_image: int = Field(24, ge=1)  # positives kept per image before balancing
    max_candidates: int = Field(2000, ge=1)  # enumeration bound per (target, type): counts, never time
    same_categories: list[str] = Field(default_factory=lambda: ["color", "material", "size", "shape", "pattern"])
    relations: Path = Path("templates/relations.v1.yaml")
    templates: Path = Path("templates/expressions.v1.yaml")
    english: Path = Path("templates/english.v1.yaml")

    @field_validator("types")
    @classmethod
    def _no_duplicates(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v) or not v:
            raise ValueError("types must be a non-empty list without repeats")
        return v


class BalanceConfig(_Strict):
    """Caps applied in a seeded random order over all candidates; null means no cap."""

    per_type_level: int | None = Field(None, ge=1)
    per_relation: int | None = Field(None, ge=1)  # samples using a relation name (GQA: left/right dominate)
    per_target_name: int | None = Field(None, ge=1)


NegativeType = Literal["replace_object", "replace_attribute", "replace_relation", "swap_object", "swap_attribute"]


class OpenAIConfig(_Strict):
    """An OpenAI-compatible endpoint. The key is read from the env var `api_key_env`, never stored."""

    base_url: str | None = None  # None = the OPENAI_BASE_URL env var
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(4, ge=0)  # transport retries: 429, 5xx, timeouts
    max_attempts: int = Field(3, ge=1)  # answers that fail validation are asked again this many times in all
    concurrency: int = Field(4, ge=1, le=256)
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    json_mode: Literal["json_object", "json_schema", "none"] = "json_object"
    cache: Path | None = None  # SQLite response cache; None = <run>/work/llm_cache.sqlite
    rewrite_prompt: str = "rewrite.v1.md"
    replace_prompt: str = "replace.v1.md"


class LanguageConfig(_Strict):
    backend: Literal["lexicon", "openai"] = "lexicon"
    rewrite_positives: bool = True
    rewrite_negatives: bool = False  # a rewrite of a negative is validated against its altered path
    negatives_per_positive: int = Field(1, ge=0)
    negative_types: list[NegativeType] = Field(
        default_factory=lambda: [
            "replace_object",
            "replace_attribute",
            "replace_relation",
            "swap_object",
            "swap_attribute",
        ]
    )
    max_rounds: int = Field(3, ge=1)  # replace sites tried per positive, one backend batch per round
    n_replacements: int = Field(5, ge=1, le=20)
    lexicon: Path = Path("templates/lexicon.v1.yaml")
    name_categories: Path = Path("templates/name_categories.v1.yaml")
    openai: OpenAIConfig = OpenAIConfig()


class RefineConfig(_Strict):
    """SugarCREPE adversarial refinement of text negatives (SPEC section 5)."""

    enabled: bool = True
    scorers: list[dict[str, Any]] = Field(default_factory=lambda: [{"kind": "ngram"}, {"kind": "grammar"}])
    bins_2d: int = Field(50, ge=2)
    bins_1d: int = Field(10, ge=2)

    @field_validator("scorers")
    @classmethod
    def _two_scorers(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(v) != 2 or not all(isinstance(s, dict) and "kind" in s for s in v):
            raise ValueError("refine needs exactly two scorers, each a mapping with a 'kind'")
        return v


SplitName = Literal["train", "val", "test"]
ImageNegativeType = Literal["replace_object", "replace_attribute", "swap_object", "swap_attribute", "flip"]


class DiffusersConfig(_Strict):
    model: str = "runwayml/stable-diffusion-inpainting"  # hub id or local dir (weights are never downloaded here)
    mode: Literal["sd", "powerpaint"] = "sd"
    steps: int = Field(30, ge=1)
    guidance_scale: float = 7.5
    batch_size: int = Field(4, ge=1)
    dilate_px: int = Field(8, ge=0)
    padding_mask_crop: int | None = 32


class ImagesConfig(_Strict):
    """Negative images (SPEC 1.5). The paper makes them for the test split only."""

    enabled: bool = True
    backend: Literal["opencv", "diffusers"] = "opencv"
    splits: list[SplitName] = Field(default_factory=lambda: ["test"])
    types: list[ImageNegativeType] = Field(
        default_factory=lambda: ["replace_object", "replace_attribute", "swap_object", "swap_attribute", "flip"]
    )
    per_positive: int = Field(1, ge=0)
    candidates: int = Field(10, ge=1, le=64)  # per negative; the filters keep one (SPEC 1.5)
    max_rounds: int = Field(3, ge=1)
    donors_per_name: int = Field(20, ge=1)  # copy-paste donors kept per object name, largest boxes first
    opencv_dilate_px: int = Field(6, ge=0)
    diffusers: DiffusersConfig = DiffusersConfig()


class Dinov2Config(_Strict):
    loader: Literal["torch.hub", "transformers"] = "torch.hub"
    repo_or_dir: str = "facebookresearch/dinov2"  # torch.hub repo, or a local hub dir with hubconf.py
    model_name: str = "dinov2_vitl14"
    source: Literal["github", "local"] = "github"
    model: str | None = None  # transformers loader: hub id or local dir


class DireConfig(_Strict):
    unet: str | None = None  # diffusers UNet2DModel: hub id or local dir (see docs/realism.md)
    classifier: str | None = None  # transformers ResNet with one logit, local dir
    steps: int = Field(20, ge=1)


class FiltersConfig(_Strict):
    """Scorers write scores; these thresholds decide (SPEC 1.6), re-appliable by `hardneg split`."""

    clip_model: str | None = None  # hub id or local dir; None = the CLIP filter is not configured
    similarity: Literal["ssim", "dinov2"] = "ssim"  # best of N; ssim is the offline stand-in
    dinov2: Dinov2Config = Dinov2Config()
    realism: Literal["seam", "dire"] = "seam"  # seam is the offline stand-in for DIRE
    dire: DireConfig = DireConfig()
    batch_size: int = Field(16, ge=1)
    min_clip_margin: float = 0.0
    max_realism: float = Field(0.2, ge=0.0, le=1.0)
    require_clip: bool = False


class RunConfig(_Strict):
    name: str | None = None  # run folder name under outputs/; None = derived from the config hash
    seed: int = 0
    shard_size: int = Field(1000, ge=1)  # images per Prefect task
    task_runner: Literal["thread", "process"] = "thread"  # "process" uses every core on big corpora
    workers: int = Field(2, ge=1, le=256)
    inputs: InputsConfig = InputsConfig()
    demo: DemoConfig = DemoConfig()
    attribute_table: Path = Path("templates/attribute_categories.json")
    splits: SplitsConfig = SplitsConfig()
    targets: TargetsConfig = TargetsConfig()
    paths: PathsConfig = PathsConfig()
    balance: BalanceConfig = BalanceConfig()
    language: LanguageConfig = LanguageConfig()
    refine: RefineConfig = RefineConfig()
    images: ImagesConfig = ImagesConfig()
    filters: FiltersConfig = FiltersConfig()

    def resolve(self, p: Path) -> Path:
        """Data paths in a config are relative to the repository root."""
        return p if p.is_absolute() else REPO_ROOT / p

    def fingerprint(self, *sections: str) -> str:
        """A hash of the named sections (all when none): a stage's work is reusable iff it matches."""
        data = self.model_dump(mode="json")
        if sections:
            data = {k: data[k] for k in sections}
        return hashlib.sha1(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Load and validate a YAML config; `overrides` are nested dicts merged on top (CLI flags)."""
    p = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        raw = load_yaml_text(p.read_text()) or {}
    except FileNotFoundError:
        raise ValueError(f"config file not found: {p}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"config {p} is not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"config {p} must be a mapping of keys, got {type(raw).__name__}")
    _merge(raw, overrides or {})
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            where = ".".join(str(x) for x in err["loc"]) or "(top level)"
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            lines.append(f"  {where}: {msg}")
        raise ValueError(f"config {p} is invalid:\n" + "\n".join(lines)) from None


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v
