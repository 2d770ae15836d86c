"""The pure decision rules on edge cases: each filter's `keep`, best-of-N, and what config allows."""

from __future__ import annotations

import pytest

from hardneg.core.config import load_config
from hardneg.core.errors import ConfigError
from hardneg.filters.decide import Rule, decide_image, decide_text, rules
from hardneg.filters.registry import filter_class, thresholds


def rule(name: str, **t: float) -> Rule:
    return Rule(filter_class(name), thresholds(name, t))


CLIP, SEAM, SSIM = rule("clip"), rule("seam"), rule("ssim")
IMAGE_RULES = [CLIP, SEAM, SSIM]


def cand(similarity=None, realism=None, clip_margin=None) -> dict:
    """Stored scores of one candidate, keyed by each filter's version as the filters stage writes them."""
    out: dict = {}
    if similarity is not None:
        out["ssim@v1"] = {"similarity": similarity}
    if realism is not None:
        out["seam@v1"] = {"realism": realism}
    if clip_margin is not None:
        out["clip@v2"] = {"clip_margin": clip_margin}
    return out


@pytest.mark.parametrize(("margin", "keep"), [(0.1, True), (0.0, False), (-0.2, False), (None, True)])
def test_text_margin(margin, keep):
    d = decide_text(cand(clip_margin=margin), [CLIP])
    assert d.keep is keep
    assert (d.reason is None) is keep


def test_scores_of_another_version_are_not_read():
    stale = {"clip@v0": {"clip_margin": -1.0}}
    assert decide_text(stale, [CLIP]).keep  # nothing of clip@v2: the filter did not score this sample


def test_image_picks_the_most_similar_passing_candidate():
    c = [
        cand(0.99, 0.5),  # most similar, but looks edited
        cand(0.80, 0.1),
        cand(0.90, 0.2),  # exactly at the threshold: passes
        cand(0.95, 0.1, clip_margin=-0.01),  # CLIP prefers the negative image
    ]
    d = decide_image(c, IMAGE_RULES)
    assert d.keep and d.candidate == 2
    reasons = dict(d.losers)
    assert set(reasons) == {0, 1, 3}
    assert "realism" in reasons[0] and "CLIP margin" in reasons[3] and "best of 4" in reasons[1]


def test_image_ties_go_to_the_lower_index_and_missing_similarity_ranks_last():
    assert decide_image([cand(0.5), cand(0.5)], IMAGE_RULES).candidate == 0
    assert decide_image([cand(), cand(0.1)], IMAGE_RULES).candidate == 1
    assert decide_image([cand(0.1), cand(0.9)], [SEAM]).candidate == 0  # no ranker: the first that passes


def test_image_with_no_passing_candidate_is_dropped_with_every_reason():
    d = decide_image([cand(realism=0.9), cand(realism=0.3)], IMAGE_RULES)
    assert not d.keep and d.candidate is None and "no candidate passed (2 tried)" in d.reason
    assert [k for k, _ in d.losers] == [0, 1]


def test_a_flip_has_no_realism_and_passes_the_realism_filter():
    assert decide_image([cand(0.4)], IMAGE_RULES).keep


def test_stricter_thresholds_only_shrink():
    c = [cand(s, r, m) for s, r, m in [(0.9, 0.05, 0.2), (0.8, 0.15, 0.05), (0.7, 0.25, 0.3)]]
    loose = decide_image(c, [rule("clip"), rule("seam", max=0.3), SSIM])
    strict = decide_image(c, [rule("clip", min_margin=0.1), rule("seam", max=0.1), SSIM])
    assert loose.keep and strict.keep and strict.candidate == 0
    assert not decide_image(c, [rule("seam", max=0.01), SSIM]).keep


def test_sharpness_rule():
    sharp = rule("sharpness", min_ratio=0.5)
    assert decide_image([{"sharpness@v1": {"sharpness_ratio": 0.4}}], [sharp]).keep is False
    assert decide_image([{"sharpness@v1": {"sharpness_ratio": 0.6}}], [sharp]).keep


def test_thresholds_of_a_filter_that_does_not_run_are_refused(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("filters:\n  thresholds:\n    clip: {min_margin: 0.1}\n")
    with pytest.raises(ConfigError, match=r"filters\.thresholds\.clip: clip does not run; add it to filters\.scorers"):
        rules(load_config(f))
    f.write_text("filters:\n  thresholds:\n    seam: {maximum: 0.1}\n")
    with pytest.raises(ConfigError, match=r"filters\.thresholds\.seam\.maximum: unknown key"):
        rules(load_config(f))
    f.write_text("filters:\n  scorers: {ssim: {}, seem: {}}\n")
    with pytest.raises(ConfigError, match="unknown filter 'seem' \\(did you mean 'seam'\\?\\)"):
        rules(load_config(f))


@pytest.mark.parametrize(
    "row",
    [
        {"id": 1, "keep": False, "reason": "its positive was dropped: x"},  # dropped before scoring
        {"id": 2, "keep": True, "scores": {}},  # kept text negative, nothing scored it
        {"id": 3, "keep": True, "candidate": 1, "scores": {"similarity": 0.9}, "passed": [1, 0]},  # kept image
        {"id": 4, "keep": False, "scores": {"refine_s1": [0.1, 0.2]}, "reason": "review: still_true"},  # by a person
        {"id": 5, "keep": False, "candidate": 0, "scores": {}, "passed": [0], "reason": "review: wrong"},
    ],
)
def test_a_negative_decision_reads_back_and_writes_as_the_row_it_was(row):
    """A decision is written as a record; its row must be the one the stage has always written, keys in
    order, so decisions and the digest of what they publish stay as they were."""
    from hardneg.core.rows import NegativeDecisionRow
    from hardneg.core.schema import as_row, to_record

    again = as_row(to_record(row, NegativeDecisionRow))
    assert again == row and list(again) == list(row)
