"""``python -m rlpyt`` runs the ``rlpyt`` command."""

import sys

from rlpyt.cli import main

sys.exit(main())
