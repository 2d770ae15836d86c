"""A new kind of text negative, filter or export is one file plus its test (docs/extending.md): the worked
examples in tests/plugins/ are registered here, and the config, the search, the decide stage, the pipeline,
stats.md, the report and the review app take them up with no edit anywhere else."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.errors import ConfigError
from hardneg.core.plugins import EXPORTS, FILTERS, IMAGE_NEGATIVES, INPAINT_BACKENDS, LANGUAGE_BACKENDS, TEXT_NEGATIVES
from hardneg.core.registry import Registry
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.flows import pipeline
from hardneg.generators.text.negatives import apply_site
from hardneg.generators.text.sites import Site, SiteVocab, enumerate_sites
from hardneg.generators.text.types import text_type
from hardneg.review.items import negative_types
from tests.helpers import node

EXAMPLES = ("tests.plugins.swap_relation", "tests.plugins.length", "tests.plugins.kind_counts")


@contextmanager
def registered(*modules: str) -> Iterator[None]:
    """The example files loaded as if they sat in their packages; every registration undone on leaving."""
    with TEXT_NEGATIVES.scoped(), FILTERS.scoped(), EXPORTS.scoped():
        for name in modules:
            importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
        yield


# -- the registry ------------------------------------------------------------------------------------


@pytest.fixture
def widgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package `widgets_pkg` whose registry finds its plugins, one file each, on the first lookup."""
    pkg = tmp_path / "widgets_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from hardneg.core.registry import Registry\nWIDGETS = Registry('widget', 'widgets_pkg')\n"
    )
    for name, order in (("zeta", "LAST"), ("alpha", "LAST"), ("first", "5")):
        (pkg / f"{name}.py").write_text(
            "from hardneg.core.registry import LAST\nfrom widgets_pkg import WIDGETS\n\n\n"
            f"@WIDGETS.add({name!r}, order={order})\nclass Widget:\n    pass\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "widgets_pkg"
    for m in [m for m in sys.modules if m.startswith("widgets_pkg")]:
        del sys.modules[m]


def test_a_new_file_in_the_package_is_found_on_the_first_lookup_and_ordered_by_its_order(widgets: str):
    reg: Registry = importlib.import_module(widgets).WIDGETS
    assert f"{widgets}.alpha" not in sys.modules  # nothing imported before a lookup
    assert reg.names() == ("first", "alpha", "zeta")  # by order, then alphabetically: never import order
    assert reg.get("alpha").name == "alpha"  # the decorator names the class


def test_an_unknown_name_is_an_error_naming_the_closest_and_a_name_is_registered_once(widgets: str):
    reg: Registry = importlib.import_module(widgets).WIDGETS
    with pytest.raises(ValueError, match=r"^where: unknown widget 'alpah' \(did you mean 'alpha'\?\); known: first,"):
        reg.get("alpah", "where")
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("alpha")(type("Other", (), {}))
    with reg.scoped():
        reg.add("beta")(type("Beta", (), {}))
        assert "beta" in reg
    assert "beta" not in reg


# -- a kind of text negative ---------------------------------------------------------------------------


def test_the_new_kind_alters_a_path_its_way():
    with registered("tests.plugins.swap_relation"):
        path = node("cup", rel=[("to the left of", node("plate")), ("on", node("table"))])
        vocab = SiteVocab(AttributeTable.load(), Words.load())
        sites = [s for s in enumerate_sites(path, vocab) if s.negative_type == "swap_relation"]
        assert [(s.level, s.word, s.other) for s in sites] == [(1, "to the left of", "on")]
        swapped = apply_site(path, sites[0])
        assert [(e.name, e.object.name) for e in swapped.relations] == [("on", "plate"), ("to the left of", "table")]
        assert text_type("swap_relation").needs_word is False


def test_what_a_site_changes_is_what_its_kind_declares_not_its_name():
    """`Site.part` reads the kind's `part`: a kind named anything (here "reverse_relations") changes what it
    says it does, and the image kinds say theirs (a flip changes the whole picture)."""
    with registered("tests.plugins.swap_relation"):
        TEXT_NEGATIVES.add("reverse_relations")(type("Reverse", (type(text_type("swap_relation")),), {}))
        site = Site("reverse_relations", 1, (0,), word="on", category="position")
        assert site.part == "relation" and site.request_category == "relation: position"
    assert Site("replace_object", 1, (0,), word="cup").part == "object"
    assert Site("flip", 1, (0,)).part == "flip" and Site("remove_object", 2, (1,)).part == "object"


def test_config_names_the_new_plugins_only_once_they_are_registered():
    wanted = {"language": {"negative_types": ["swap_relation"]}, "exports": {"kind_counts": {"enabled": False}}}
    with pytest.raises(ConfigError, match="unknown text negative type 'swap_relation'"):
        load_config(None, {"language": wanted["language"]})
    with pytest.raises(ConfigError, match=r"exports\.kind_counts: unknown key"):
        load_config(None, {"exports": wanted["exports"]})
    with registered(*EXAMPLES):
        cfg = load_config(None, wanted)
        assert cfg.language.negative_types == ["swap_relation"] and cfg.exports.kind_counts.enabled is False
        default = load_config()
        assert default.language.negative_types[-1] == "swap_relation"  # every registered kind, in order
        assert 0 < default.negative_mix.shares["swap_relation"] < default.negative_mix.shares["swap_attribute"]
        with pytest.raises(ConfigError, match=r"exports\.kind_counts\.enabld: unknown key \(did you mean"):
            load_config(None, {"exports": {"kind_counts": {"enabld": True}}})
        with pytest.raises(ConfigError, match=r"unknown filter 'lenght' \(did you mean 'length'\?\)"):
            pipeline.plan(load_config(None, {"filters": {"scorers": {"lenght": {}}}}), Path("/nonexistent/run"))


# -- all three in a run -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run with the three examples registered (and, after it, unregistered again)."""
    root = tmp_path_factory.mktemp("plugins") / "run"
    with registered(*EXAMPLES), pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "STAGES", pipeline.stages())  # the export registered after the pipeline's import
        cfg = load_config(
            None,
            {
                "demo": {"n_scenes": 24},
                "shard_size": 24,
                "images": {"enabled": False},
                "pixels": {"enabled": False},  # the demo's drawn colours would take the few samples of a new kind
                "refine": {"enabled": False},  # its balance would drop the few negatives of a new kind
                "filters": {"scorers": {"length": {}}, "thresholds": {"length": {"max_ratio": 1.1}}},
                "exports": {k: {"enabled": False} for k in ("tricd", "probes", "probe_b", "imagecode")},
            },
        )
        pipeline.run_local(cfg, root)
    return root


def _jsonl(root: Path, stage: str, kind: str) -> list[dict]:
    files = sorted((root / "work" / stage).glob(f"{kind}-*.jsonl"))
    return [orjson.loads(x) for f in files for x in f.read_bytes().splitlines()]


def test_the_run_makes_the_new_kind_and_the_filter_decides(plugin_run: Path):
    made = [n for n in _jsonl(plugin_run, "language", "negatives") if n["negative_type"] == "swap_relation"]
    assert made and all(n["change"]["from"] != n["change"]["with"] for n in made)
    decide = orjson.loads((plugin_run / "work" / "decide" / "_stage.json").read_bytes())["meta"]
    assert decide["passes"]["length:text_negative"]["seen"] > 0
    assert decide["thresholds"]["length"] == {"max_ratio": 1.1}
    dropped = [d for d in _jsonl(plugin_run, "decide", "negatives") if "length:" in (d.get("reason") or "")]
    assert dropped, "the filter's rule decided nothing"


def test_the_export_runs_and_stats_and_the_report_show_the_plugins(plugin_run: Path):
    summary = orjson.loads((plugin_run / "kind_counts" / "summary.json").read_bytes())
    assert summary["enabled"] and sum(summary["counts"].get("swap_relation", {}).values()) > 0
    assert "### Text negatives per kind (`kind_counts/`)" in (plugin_run / "stats.md").read_text()
    report = plugin_run / "report"
    texts = (report / "text-negatives.html").read_text()
    assert "relations swapped" in texts  # the kind's label, in the kinds' legend
    assert "words in the negative over words in its positive" in (report / "filters.html").read_text()
    assert "Text negatives per kind" in "".join(f.read_text() for f in report.glob("exports*.html"))


def test_the_review_app_is_served_the_new_kinds_label():
    with registered("tests.plugins.swap_relation"):
        assert negative_types()["text_negative"]["swap_relation"]["label"] == "relations swapped"
    assert "swap_relation" not in negative_types()["text_negative"]


# -- backends ------------------------------------------------------------------------------------------


def test_a_registered_backend_is_configured_built_and_asked_what_it_needs(tmp_path: Path):
    """A language and an inpainting backend are one class each: the config names them, the run builds
    them from the config, preflight asks their requirements, the language stage their fingerprint, and the
    kinds of negative image made by default follow whether the painter is generative."""
    from hardneg.backends.lexicon import LexiconBackend
    from hardneg.backends.registry import make_inpaint_backend, make_language_backend
    from hardneg.backends.requirements import Requirement
    from hardneg.core.words.vocab import Lexicon
    from hardneg.flows.preflight import requirements
    from hardneg.generators.images.types import default_types

    with pytest.raises(ConfigError, match="unknown language backend 'echo'"):
        load_config(None, {"language": {"backend": "echo"}})
    with LANGUAGE_BACKENDS.scoped(), INPAINT_BACKENDS.scoped():

        @LANGUAGE_BACKENDS.add("echo")
        class Echo(LexiconBackend):  # the lexicon's answers, under another name and with a requirement
            @classmethod
            def requirements(cls, cfg: object) -> list[Requirement]:
                return [Requirement("language.backend echo", ("json",))]

            @classmethod
            def fingerprint(cls, cfg: object) -> object:
                return "echo@v1"

        @INPAINT_BACKENDS.add("painter")
        class Painter:
            generative = True

            @classmethod
            def from_config(cls, cfg: object) -> Painter:
                return cls()

            @classmethod
            def requirements(cls, cfg: object) -> list[Requirement]:
                return []

        cfg = load_config(None, {"language": {"backend": "echo"}, "images": {"backend": "painter"}})
        assert isinstance(make_language_backend(cfg, tmp_path, Lexicon.load(cfg.resolve(cfg.language.lexicon))), Echo)
        assert isinstance(make_inpaint_backend(cfg), Painter)
        assert [r.role for r in requirements(cfg, {"language", "images"})] == ["language.backend echo"]
        assert (
            pipeline.STAGES[[s.name for s in pipeline.STAGES].index("language")].extra_fingerprint(
                type("R", (), {"cfg": cfg})()
            )[1]
            == "echo@v1"
        )
        assert default_types("painter") == tuple(n for n, c in IMAGE_NEGATIVES.items() if c.in_paper)
        assert default_types("opencv") != default_types("painter")
