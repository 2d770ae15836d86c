"""The human filter's choices (FineCops-Ref's Correct, Ambiguous or Wrong expression, plus the same gate for
negatives)."""

from __future__ import annotations

import unicodedata
from typing import Any

# label -> (button text, key). A key means one verdict whatever the kind, so a hand that moves from a
# positive to a negative never says the wrong thing: 1 the sample is what it claims to be, 2 something
# else in the image fits (more than one object for a positive, any object for a negative), 3 the
# expression is wrong or unreadable as a description, 4 the image cannot be judged.
# Positives: the paper's three choices.
POSITIVE_LABELS: dict[str, tuple[str, str]] = {
    "correct": ("Correct", "1"),
    "ambiguous": ("Ambiguous", "2"),
    "wrong": ("Wrong expression", "3"),
}
# Negatives: is the expression (or the edited image) really false of the image?
NEGATIVE_LABELS: dict[str, tuple[str, str]] = {
    "negative": ("Negative", "1"),
    "still_true": ("Still true", "2"),
    "unreadable": ("Unreadable", "4"),
}
ALL_LABELS = {**POSITIVE_LABELS, **NEGATIVE_LABELS}

# Every label is a vote to keep or to drop; Unreadable is a vote to drop like Still true (a negative nobody
# can judge is no test). A majority of annotators decides (`apply.decide`); SEVERITY only names the drop:
# when the drop voters split evenly between two reasons, the more severe one is recorded.
SEVERITY = {"correct": 0, "ambiguous": 1, "wrong": 2, "negative": 0, "unreadable": 1, "still_true": 2}
DROPPING = frozenset({"ambiguous", "wrong", "still_true", "unreadable"})

GUIDELINES = (
    "Decide whether the description refers accurately and unambiguously to the target in the red box. "
    "Green and blue boxes mark the other objects the description mentions. "
    "Wrong expression: an attribute or relation does not match the image, or the text is hard to understand. "
    "Ambiguous: more than one object in the image fits the description. "
    "For a negative: Negative if the description fits nothing in the image (for an edited image: nothing "
    "in the edited image), Still true if something fits it, Unreadable if the image or text cannot be judged."
)


MAX_NAME = 64


def annotator_name(raw: Any) -> str:
    """An annotator's name as the store keeps it: NFKC-normalised (a full-width or composed spelling is the
    same name), spaces at either end dropped, 1-64 printable characters. Refused: control and format
    characters (a right-to-left override, a zero-width space), which would show one name and store another
    (`bob` plus a zero-width space would vote a second time). Raises ValueError saying why."""
    if not isinstance(raw, str):
        raise ValueError("an annotator name is required (1-64 printable characters)")
    name = unicodedata.normalize("NFKC", raw).strip()
    if not name:
        raise ValueError("an annotator name is required (1-64 printable characters)")
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), None)
    if bad is not None:
        raise ValueError(f"an annotator name is 1-64 printable characters, not U+{ord(bad):04X}")
    if len(name) > MAX_NAME:
        raise ValueError(f"an annotator name is 1-64 printable characters, not {len(name)}")
    return name


def kind_of(record: dict[str, Any]) -> str:
    """positive, text_negative or image_negative (a record without `positive_id` is a positive)."""
    if "positive_id" not in record and "negative_type" not in record:
        return "positive"
    return "image_negative" if record.get("negative_cate") == "image" else "text_negative"


def labels_for(kind: str) -> dict[str, tuple[str, str]]:
    return POSITIVE_LABELS if kind == "positive" else NEGATIVE_LABELS
