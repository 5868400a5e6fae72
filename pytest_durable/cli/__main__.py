"""``python -m pytest_durable.cli`` is the ``durable`` command."""

import sys

from . import main

sys.exit(main())
