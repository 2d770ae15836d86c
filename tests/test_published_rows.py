"""The records of what the run publishes write the rows they were read from, keys in order: a split file's
samples (a positive, a text or an image negative, with and without the decide stage's scores) and the
probes' rows, whose keys differ by kind (an image set names its image after its prompts; only a predicate
swap has a plausibility, only a composition group a category)."""

from __future__ import annotations

from typing import Any

import pytest

from hardneg.core.schema import as_row, to_record
from hardneg.exports.published import PublishedImageNegative, PublishedPositive, PublishedTextNegative
from hardneg.exports.rows import ProbeCRow, ProbeRRow
from tests.test_stage_alone import image_negative, node, positive, text_negative

P = positive(1, node("cup", "red", oid="1"))
SCORES = {"clip": 0.3}
CERT = {"true": {"name": "cup"}, "false": {"name": "dog"}}
HEAD = {"split": "test", "positive_id": 1, "triple": ["cup", "on", "table"]}
PROMPTS = {"correct": "a cup on a table", "swapped": "a cup under a table"}
SAMPLES = [
    ({**P, "split": "test"}, PublishedPositive),
    ({**P, "scores": SCORES, "split": "test"}, PublishedPositive),
    ({**text_negative(2, P), "split": "test"}, PublishedTextNegative),
    ({**text_negative(2, P), "scores": SCORES, "split": "test"}, PublishedTextNegative),
    ({**image_negative(3, P), "scores": {}, "split": "test"}, PublishedImageNegative),
]
PROBES = [
    (
        {
            **HEAD,
            "kind": "probe_r/predicate",
            "image_id": "7",
            **PROMPTS,
            "swap": {"relation": ["on", "under"]},
            "plausibility": {"logp": -9.0},
            "certificate": CERT,
            "id": 5,
            "image": None,
        },
        ProbeRRow,
    ),
    (
        {
            **HEAD,
            "kind": "probe_r/subject",
            "image_id": "7",
            **PROMPTS,
            "swap": {"subject": ["cup", "dog"]},
            "certificate": CERT,
            "id": 6,
            "image": "probes/images/7.jpg",
        },
        ProbeRRow,
    ),
    (
        {
            **HEAD,
            "kind": "probe_r/subject_only",
            **PROMPTS,
            "image_id": "8",
            "certificate": CERT,
            "id": 7,
            "image": None,
        },
        ProbeRRow,
    ),
    (
        {
            **HEAD,
            "kind": "probe_r/swapped_subject",
            **PROMPTS,
            "image_id": "9",
            "certificate": CERT,
            "id": 8,
            "image": None,
        },
        ProbeRRow,
    ),
    (
        {
            "split": "test",
            "positive_id": 1,
            "image_ids": ["7", "8"],
            "kind": "probe_c/composition",
            "category": "color",
            "swap": {"attribute": ["red", "blue"]},
            "prompts": ["a red cup", "a blue cup"],
            "certificate": CERT,
            "id": 9,
            "images": [None, None],
        },
        ProbeCRow,
    ),
    (
        {
            "split": "test",
            "positive_id": 1,
            "image_ids": ["7", "8"],
            "kind": "probe_c/object",
            "swap": {"object": ["cup", "bowl"]},
            "prompts": ["a red cup", "a red bowl"],
            "certificate": CERT,
            "id": 10,
            "images": [None, None],
        },
        ProbeCRow,
    ),
]


@pytest.mark.parametrize(("row", "record"), SAMPLES + PROBES)
def test_a_published_row_read_back_writes_itself(row: dict[str, Any], record: type):
    assert list(as_row(to_record(row, record)).items()) == list(row.items())


def test_a_probe_is_made_with_its_id_and_no_placed_image():
    made = ProbeRRow.made(**{k: v for k, v in PROBES[0][0].items() if k not in ("id", "image")})
    again = ProbeRRow.made(**{k: v for k, v in PROBES[0][0].items() if k not in ("id", "image")})
    assert made.id == again.id and made.image is None
    group = ProbeCRow.made(**{k: v for k, v in PROBES[4][0].items() if k not in ("id", "images")})
    assert group.images == [None, None] and group.id != made.id
