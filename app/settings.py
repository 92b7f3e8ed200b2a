"""The app's settings: the one Settings class of mia (mia.graph.models.settings), re-exported for
the CLI.

Every variable in docs/architecture.md is a field there, named as in the environment; values from
`.env` are passed down explicitly (Context defaults, model keys, store address), never written into
os.environ.
"""

from __future__ import annotations

from mia.graph.models.check import check_role_models
from mia.graph.models.settings import Settings, get_settings, read_settings

__all__ = ["Settings", "check_role_models", "get_settings", "read_settings"]
