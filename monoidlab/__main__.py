"""``python -m monoidlab``: the command line (same as the ``monoidlab`` script)."""

import sys

from monoidlab.cli import main

sys.exit(main())
