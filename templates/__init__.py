"""Package data: read through `hardneg.core.resources`, never by path arithmetic."""

from hardneg import require_full_name

require_full_name(__name__)
