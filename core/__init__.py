"""hardneg core: records, GQA loading, the path executor, ids, config and run folders."""

from hardneg import require_full_name

require_full_name(__name__)
