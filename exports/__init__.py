"""Every benchmark shape a run writes from its decided samples: the FineCops-Ref splits (with COCO, the Hugging
Face dataset, its card and statistics), TRICD, the probes and ImageCoDe.
"""

from hardneg import require_full_name

require_full_name(__name__)
