from hardneg import require_full_name

require_full_name(__name__)
