"""``python -m cyrbm.cli``: the ``cyrbm`` command."""
import sys

from cyrbm.cli.main import main

sys.exit(main())
