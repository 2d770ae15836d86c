"""The language stage: rewrite the balanced positives and make their text negatives.

Only positives that survived balancing reach the language backend (an LLM or the offline lexicon), so
its cost scales with the benchmark, not with the candidates.
"""

from __future__ import annotations

from typing import Any

from hardneg.backends.registry import make_language_backend
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.ingest import corpus_vocab
from hardneg.core.gqa.plausibility import corpus_notes, load_plausibility
from hardneg.core.plugins import LANGUAGE_BACKENDS
from hardneg.core.rows import (
    HYGIENE_GRAPHS,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    PATHS_POSITIVES,
    PLAUSIBILITY_COUNTS,
    PLAUSIBILITY_PRIOR,
    SELECT_KEPT,
    TextNegativeRow,
)
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.paths.stage import PathResources
from hardneg.generators.paths.targets import RENDERER_CONFIG, RENDERER_DATA
from hardneg.generators.text.context import Context
from hardneg.generators.text.english import EnglishCheck, check_negatives, check_positives
from hardneg.generators.text.english_words import TableReader
from hardneg.generators.text.negatives import GENERATOR as NEGATIVES_GENERATOR
from hardneg.generators.text.negatives import NegativeContext, make_text_negatives
from hardneg.generators.text.rewrite import GENERATOR as REWRITE_GENERATOR
from hardneg.generators.text.rewrite import RewriteValidator, rewrite_records, spacy_model_name


class LanguageStage(Stage):
    name = "language"
    # v2: the English check trusts the word tables over the tagger ("a fire hydrant", "the mitt that is")
    # and reads rewritten negatives
    version = f"language@v2+{REWRITE_GENERATOR}+{NEGATIVES_GENERATOR}"
    reads = ("ingest", "hygiene", "plausibility", "paths", "select")
    writes = outputs(LANGUAGE_NEGATIVES, LANGUAGE_POSITIVES)
    config = ("seed", "language", "targets.min_area_frac", *RENDERER_CONFIG)
    data = ("language.lexicon", *RENDERER_DATA)

    def extra_fingerprint(self, run: Run) -> Any:
        """The word tables, and what else the language backend's output depends on (an LLM's prompt files)."""
        return [words_digest(), LANGUAGE_BACKENDS.get(run.cfg.language.backend).fingerprint(run.cfg)]

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        lang = cfg.language
        kept = unit.shared("select", "ids", lambda: frozenset(k.id for k in unit.records_all(SELECT_KEPT)))
        positives = [p for p in unit.records(PATHS_POSITIVES) if p.id in kept]
        unit.items_in = len(positives)
        graphs = {r.image_id: r.scene_graph() for r in unit.records(HYGIENE_GRAPHS)}
        res = PathResources.load(cfg)
        lexicon = Lexicon.load(cfg.resolve(lang.lexicon))
        vocab = corpus_vocab(unit.upstream("ingest"))
        backend = make_language_backend(cfg, unit.run.work, lexicon)
        validator = RewriteValidator(res.table, lexicon, frozenset(vocab["names"]))
        if lang.rewrite_positives and positives:
            rejects, stats = rewrite_records(positives, backend, validator, cfg.seed, stage="rewrite")
            unit.rejects.extend(rejects)
            unit.stats.update({f"rewrite_positives:{k}": v for k, v in stats.items()})
        reader = TableReader(res.words, res.table, res.renderer.relations, lexicon)
        english = EnglishCheck(res.words, reader, rewrites_read=type(backend).reads_own_rewrites)
        positives, rejects = check_positives(positives, english)
        unit.rejects.extend(rejects)
        unit.stats["english:positives_dropped"] += len(rejects)
        plausibility = unit.shared(
            "plausibility",
            "model",
            lambda: load_plausibility(unit.read_all(PLAUSIBILITY_COUNTS), unit.read_all(PLAUSIBILITY_PRIOR)),
        )
        notes = corpus_notes(unit)
        ctx = NegativeContext(
            table=res.table,
            words=res.words,
            renderer=res.renderer,
            plausibility=plausibility,
            context=unit.shared("plausibility", "context", lambda: Context(plausibility.c, res.words, notes.together)),
            notes=notes,
            small=lang.small_unannotated,
            scene_fit=lang.scene_fit,
            replacement_fit=lang.replacement_fit,
            # the words a replacement is drawn from: the run's and the prior's (a ten-image run names little)
            vocab={kind: vocab[kind] + getattr(plausibility.c, kind) for kind in ("names", "attributes", "relations")},
            seed=cfg.seed,
            per_positive=lang.negatives_per_positive,
            max_rounds=lang.max_rounds,
            n_replacements=lang.n_replacements,
            words_per_site=lang.words_per_site,
            images=unit.images,
            min_area=cfg.targets.min_area_frac,  # a piece of clothing left off a person: readable as a target is
            types=tuple(lang.negative_types),
        )
        negatives: list[TextNegativeRow] = []
        if lang.negatives_per_positive:  # of the positives as rewritten and checked
            negatives, rejects, stats = make_text_negatives(positives, graphs, ctx, backend)
            unit.rejects.extend(rejects)
            unit.stats.update(stats)
        if lang.rewrite_negatives and negatives:
            rejects, stats = rewrite_records(negatives, backend, validator, cfg.seed, stage="rewrite_negatives")
            unit.rejects.extend(rejects)
            unit.stats.update({f"rewrite_negatives:{k}": v for k, v in stats.items()})
        if negatives:  # after the rewrite: an LLM's rewritten negative is checked like a positive's
            negatives, rejects = check_negatives(negatives, english)
            unit.rejects.extend(rejects)
            unit.stats["english:negatives_dropped"] += len(rejects)
        unit.stats.update({f"english:{k}": v for k, v in english.stats.items()})
        unit.stats.update({f"backend:{k}": v for k, v in backend.stats().items()})
        unit.meta.update(backend=backend.version, spacy=spacy_model_name())
        unit.write("negatives", negatives)
        unit.write("positives", positives)

    def summarize(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """The backend and the spaCy pipeline that actually ran (None where no rewrite needed spaCy), and a
        warning when more of the server's answers than `warn_unusable_share` were unusable."""
        calls = sum(u["stats"].get("backend:calls", 0) for u in units)
        unusable = sum(u["stats"].get("backend:unusable_answers", 0) for u in units)
        share = run.cfg.language.openai.warn_unusable_share
        warnings = []
        if calls and unusable / calls > share:
            warnings.append(
                f"language server: {unusable} of its {calls} answers ({unusable / calls:.0%}) were empty or not in "
                f"the form asked for, so most rewrites and replacement words are missing "
                f"(language.openai.warn_unusable_share {share:g})"
            )
        return {
            "backends": sorted({u["meta"]["backend"] for u in units}),
            "spacy": sorted({u["meta"]["spacy"] for u in units if u["meta"].get("spacy")}),
            "warnings": warnings,
        }
