"""`python -m preview`: the offline preview (see :mod:`preview.cli`)."""

import sys

from preview.cli import main

sys.exit(main())
