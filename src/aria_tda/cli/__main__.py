"""``python -m aria_tda.cli`` — same as the ``aria-tda`` console script."""

import sys

from aria_tda.cli import main

sys.exit(main())
