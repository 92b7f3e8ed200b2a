"""The process-wide llama.cpp servers: one per key, base servers kept, only the newest adapters."""

from __future__ import annotations

import pytest

from mia.graph.models import servers
from mia.graph.models.servers import ServerKey


@pytest.fixture()
def fake_start(monkeypatch: pytest.MonkeyPatch) -> list[ServerKey]:
    started: list[ServerKey] = []

    def start(key: ServerKey) -> object:
        started.append(key)
        return object()

    monkeypatch.setattr(servers, "_start", start)
    servers.clear_servers()
    yield started
    servers.clear_servers()


def test_one_server_per_key_and_old_adapters_dropped(fake_start: list[ServerKey]) -> None:
    base = ServerKey("/m/q.gguf", None, 8192, 4, None)
    first = servers.get_server(base)
    assert servers.get_server(base) is first and fake_start == [base]
    adapters = [base._replace(adapter=f"/a/v{i}.gguf") for i in range(4)]
    for key in adapters:
        servers.get_server(key)
    kept = [k for k in servers._SERVERS if k.adapter]
    assert kept == adapters[-servers.MAX_ADAPTER_SERVERS :]
    assert servers.get_server(base) is first  # the base server is never evicted
    servers.get_server(adapters[0])  # an evicted adapter starts again when asked for
    assert fake_start.count(adapters[0]) == 2


def test_missing_files_are_clear_errors(tmp_path) -> None:
    from mia.graph.models.errors import ModelFileNotFoundError

    with pytest.raises(ModelFileNotFoundError, match="No GGUF file"):
        servers._start(ServerKey(str(tmp_path / "none.gguf"), None, 512, 1, 1))
