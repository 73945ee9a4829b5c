"""`python -m acp_hermes` runs the same entry point as the `acp-hermes` script."""

import sys

from acp_hermes.app.cli import main

sys.exit(main())
