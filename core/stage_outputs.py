"""Every output of the pipeline's stages, ingest to decide, as a typed handle (`core/schema.py: Output`): the
stage that writes it, the kind, its record type. A stage declares what it writes with its handles
(`writes = outputs(LANGUAGE_POSITIVES, LANGUAGE_NEGATIVES)`) and a reader names the one it reads
(`unit.records(LANGUAGE_POSITIVES)` gives `PositiveRow`s), so the wiring is checked where it is written:
a misspelt handle is a NameError, a reader of the wrong type a type checker's error. The export stages'
handles are beside their record types (`exports/rows.py`)."""

from __future__ import annotations

from hardneg.core.rows import (
    BalanceRow,
    CountRow,
    FilterScoreRow,
    FoldCountRow,
    GraphRow,
    ImageNegativeRow,
    KeptRow,
    NegativeDecisionRow,
    PhotoRow,
    PixelNegativeRow,
    PixelPositiveRow,
    PositiveDecisionRow,
    PositiveRow,
    PriorRow,
    RefineScoreRow,
    TallyRow,
    TextNegativeRow,
)
from hardneg.core.schema import Output

INGEST_GRAPHS = Output("ingest", "graphs", GraphRow)  # as loaded and validated, one file per shard
INGEST_PHOTOS = Output("ingest", "photos", PhotoRow)
HYGIENE_GRAPHS = Output("hygiene", "graphs", GraphRow)  # cleaned: what every later stage reads
HYGIENE_TALLIES = Output("hygiene", "tallies", TallyRow)
PLAUSIBILITY_COUNTS = Output("plausibility", "counts", CountRow)
PLAUSIBILITY_FOLDCOUNTS = Output("plausibility", "foldcounts", FoldCountRow)
PLAUSIBILITY_ANNOTATIONS = Output("plausibility", "annotations", CountRow)
PLAUSIBILITY_PRIOR = Output("plausibility", "prior", PriorRow)
PATHS_POSITIVES = Output("paths", "positives", PositiveRow)  # the candidates
PATHS_BALANCE = Output("paths", "balance", BalanceRow)
SELECT_KEPT = Output("select", "kept", KeptRow)
LANGUAGE_NEGATIVES = Output("language", "negatives", TextNegativeRow)
LANGUAGE_POSITIVES = Output("language", "positives", PositiveRow)  # the kept candidates, rewritten and checked
IMAGE_NEGATIVES = Output("images", "image-negatives", ImageNegativeRow)
PIXELS_POSITIVES = Output("pixels", "positives", PixelPositiveRow)
PIXELS_NEGATIVES = Output("pixels", "negatives", PixelNegativeRow)
FILTER_SCORES = Output("filters", "scores", FilterScoreRow)
REFINE_SCORES = Output("refine", "scores", RefineScoreRow)
DECIDED_POSITIVES = Output("decide", "positives", PositiveDecisionRow)
DECIDED_NEGATIVES = Output("decide", "negatives", NegativeDecisionRow)
