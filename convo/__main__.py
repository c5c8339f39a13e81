"""``python -m convo``: the same as the ``convo`` command."""

from .cli import main

raise SystemExit(main())
