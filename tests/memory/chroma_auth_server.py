"""Run Chroma's own Python server (chromadb.app, the FastAPI server the installed chromadb ships)
with the authentication Chroma configures from its environment (CHROMA_SERVER_AUTHN_PROVIDER, ...).

Why not `chroma run`: Chroma 1.x's Rust server only has a no-op authenticator, so it cannot refuse a
client. The Python server checks tokens and basic auth with Chroma's own providers. It imports
OpenTelemetry's FastAPI instrumentation, an optional package not installed here, so a stand-in that
instruments nothing is registered first; nothing else is replaced. The Python server (unlike the Rust
one) reads each collection's embedding function, so mia's is registered too: a Python Chroma server
for mia stores needs mia installed beside it (docs/security.md).

Usage: python chroma_auth_server.py PORT (the data folder and the auth come from the environment).
"""

from __future__ import annotations

import sys
import types


def _without_fastapi_tracing() -> None:
    try:
        import opentelemetry.instrumentation.fastapi  # noqa: F401
    except ImportError:
        module = types.ModuleType("opentelemetry.instrumentation.fastapi")
        module.FastAPIInstrumentor = type(  # type: ignore[attr-defined]
            "FastAPIInstrumentor", (), {"instrument_app": staticmethod(lambda app, **_: None)}
        )
        package = types.ModuleType("opentelemetry.instrumentation")
        package.fastapi = module  # type: ignore[attr-defined]
        sys.modules.setdefault("opentelemetry.instrumentation", package)
        sys.modules["opentelemetry.instrumentation.fastapi"] = module


if __name__ == "__main__":
    _without_fastapi_tracing()
    import uvicorn

    import mia.memory.chroma_ef  # noqa: F401 - registers mia's embedding function with Chroma

    uvicorn.run("chromadb.app:app", host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
