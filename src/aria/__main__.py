"""``python -m aria`` — same as the ``aria`` console script."""

import sys

from aria.cli import main

sys.exit(main())
