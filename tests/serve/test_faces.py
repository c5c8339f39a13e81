"""`create_app(faces=…)` and `convo serve --faces` (API.md §24 Details): which protocols a
served bot answers; a face that is off answers JSON 404 at its routes, /api/health always."""

from __future__ import annotations

import subprocess
import sys

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import create_app
from convo.serve._http.faces import FACES, chosen


def test_all_faces_are_on_by_default_and_the_native_one_answers() -> None:
    assert chosen(None) == ("native", "agui", "ai-sdk", "openai", "mcp") == FACES
    with TestClient(create_app(TEMPLATE, model())) as client:
        assert client.post("/api/conversations", json={}).status_code == 201
        assert client.get("/").status_code == 200


def test_a_face_that_is_off_answers_json_404_and_health_stays() -> None:
    with TestClient(create_app(TEMPLATE, model(), faces=["agui"])) as client:
        off = client.post("/api/conversations", json={})
        assert (off.status_code, off.json()) == (
            404, {"error": "Not Found: POST /api/conversations"})
        assert client.get("/").status_code == 404
        assert client.get("/api/health").json()["status"] == "ok"


def test_faces_are_named_by_an_iterable_or_one_string_in_any_order() -> None:
    assert chosen(["mcp", "native"]) == ("native", "mcp")
    assert chosen(" ai-sdk , openai") == ("ai-sdk", "openai")


def test_an_unknown_face_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError) as caught:
        create_app(TEMPLATE, model(), faces=["native", "graphql"])
    assert str(caught.value) == ("unknown face 'graphql': the faces are native, agui, ai-sdk, "
                                 "openai, mcp")
    with pytest.raises(ValueError) as caught:
        create_app(TEMPLATE, model(), faces=[])
    assert str(caught.value) == ("faces names no face: choose among native, agui, ai-sdk, "
                                 "openai, mcp")


def test_convo_serve_faces_refuses_an_unknown_face_with_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "convo", "serve", "--faces", "native,soap",
                           "bot.py"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "convo serve: error: argument --faces: unknown face 'soap': the faces are native, "
        "agui, ai-sdk, openai, mcp")
