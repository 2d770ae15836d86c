"""`python -m hardneg ...` is the `hardneg` command."""

import sys

from hardneg.cli import main

sys.exit(main())
