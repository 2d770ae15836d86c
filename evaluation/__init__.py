"""Metrics for the benchmarks hardneg emits, importable without Prefect or torch (numpy and stdlib only).

One module per paper, each a set of pure functions over plain data:

- `evaluation.finecops`: FineCops-Ref (Precision@1, Recall@1 over negative-positive pairs, AUROC); has a CLI.
- `evaluation.tricd`: TRICD contextual phrase detection (AP over IoU 0.50:0.95, Group-Recall@1).
- `evaluation.groundcam`: Q-GroundCAM activation-map grounding metrics (IoU, Dice, WDP, IO ratio, pointing game).
- `evaluation.probes`: Probe-R / Probe-C image-text matching accuracy (correct vs swapped prompt).
- `evaluation.imagecode`: ImageCoDe retrieval accuracy among the images of a set (all, video, static).
- `evaluation.boxes`: the xywh box helpers they share.
"""

from hardneg import require_full_name

require_full_name(__name__)
