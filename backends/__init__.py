"""Model adapters behind small protocols: each role has an offline backend and a real-model one."""

from hardneg import require_full_name

require_full_name(__name__)
