"""Attachments in the terminal chat (API.md §16): ``/attach PATH`` attaches a file to the next
message (shown above the prompt until it is sent), ``convo chat -a PATH`` to the first; the
vision model (the fake OpenAI server) gets exactly the image."""

from __future__ import annotations

import base64
from pathlib import Path

from parts_files import png
from terminal_harness import Spawn, convo_cmd, env, terminal

from convo import Image, Message, Session, Text
from convo._terminal.slash_commands import Commands
from convo.testing import OpenAIServer

__all__ = ["env", "terminal"]  # the fixtures

PNG = png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
SENT = [{"role": "user", "content": [
    {"type": "text", "text": "What is this?"},
    {"type": "image_url", "image_url": {"url": PNG_URL}}]}]


def test_attach_goes_with_the_next_message_not_at_once(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    said: list[str] = []
    commands = Commands(say=said.append)
    session = Session()
    assert commands.handle(f"/attach {tmp_path / 'shot.png'}", session) is None
    assert said == [f"[image: shot.png, {len(PNG)} B] goes with your next message "
                    "(/detach drops it)"]
    assert commands.pending() == f"attached: [image: shot.png, {len(PNG)} B]"
    sent = commands.handle("What is this?", session)
    assert sent == (Text("What is this?"), Image(PNG, media_type="image/png",
                                                 filename="shot.png"))
    assert commands.pending() is None
    assert commands.handle("and now?", session) == "and now?"


def test_attach_refuses_a_missing_or_too_big_file(tmp_path: Path) -> None:
    said: list[str] = []
    commands = Commands(say=said.append, max_attachment_bytes=10)
    (tmp_path / "big.png").write_bytes(PNG)
    commands.handle(f"/attach {tmp_path / 'nothing.png'}", Session())
    commands.handle(f"/attach {tmp_path / 'big.png'}", Session())
    commands.handle("/attach", Session())
    assert said == [
        f"not attached: cannot read {tmp_path / 'nothing.png'}: No such file or directory",
        f"not attached: {tmp_path / 'big.png'} is {len(PNG)} B ({len(PNG)} bytes), over the "
        "limit of 10 B (10 bytes) for an attachment (--max-attachment-bytes)",
        "nothing attached (/attach PATH attaches a file to your next message)"]
    assert commands.attached == []


def test_retry_sends_the_attachment_again(tmp_path: Path) -> None:
    asked = Message("user", [Text("What is this?"), Image(PNG, media_type="image/png")])
    session = Session([asked, Message("assistant", "A square.")])
    assert Commands(say=lambda _: None).handle("/retry", session) == asked.content
    assert session.messages == []


def test_chat_a_attaches_to_the_first_message(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    with OpenAIServer(["A tiny square.", "Blue."]) as server:
        result = convo_cmd("chat", "--no-log", "--no-stream", "--base-url", server.base_url,
                           "-a", str(tmp_path / "shot.png"), env=env,
                           stdin="What is this?\nWhat colour?\n")
    assert result.returncode == 0, result.stderr
    assert server.requests[0]["messages"] == SENT
    assert server.requests[1]["messages"][2] == {"role": "user", "content": "What colour?"}
    assert f"attached: [image: shot.png, {len(PNG)} B]\n" in result.stdout
    assert "A tiny square." in result.stdout and "iVBOR" not in result.stdout


def test_chat_a_with_a_bad_file_stops_before_the_chat(env: dict[str, str],
                                                     tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    missing = convo_cmd("chat", "--no-log", "-a", str(tmp_path / "nope.png"), env=env)
    assert missing.returncode == 2
    assert f"-a: cannot read {tmp_path / 'nope.png'}: No such file or directory" in (
        missing.stderr)
    big = convo_cmd("chat", "--no-log", "-a", str(tmp_path / "shot.png"),
                    "--max-attachment-bytes", "10", env=env)
    assert big.returncode == 2
    assert (f"-a: {tmp_path / 'shot.png'} is {len(PNG)} B ({len(PNG)} bytes), over the limit "
            "of 10 B (10 bytes) for an attachment (--max-attachment-bytes)") in big.stderr


def test_attach_in_a_terminal_with_tab_completion(terminal: Spawn, env: dict[str, str],
                                                  tmp_path: Path) -> None:
    (tmp_path / "screenshot.png").write_bytes(PNG)
    with OpenAIServer(["A tiny square."]) as server:
        t = terminal("chat", "--no-log", "--no-stream", "--base-url", server.base_url)
        t.expect("You:")
        t.child.send(f"/attach {tmp_path}/scree")
        t.expect("screenshot.png")  # the menu of completions
        t.child.send("\t\r")  # Tab completes the path, Enter sends the command
        t.expect(f"[image: screenshot.png, {len(PNG)} B] goes with your next message")
        t.expect(f"attached: [image: screenshot.png, {len(PNG)} B]")
        t.type("What is this?")
        t.expect("A tiny square.")
        t.expect("You:")
        t.end_of_input()
        assert t.finish() == 0
    assert server.requests[0]["messages"][0]["content"][1] == {
        "type": "image_url", "image_url": {"url": PNG_URL}}
    assert "iVBOR" not in t.seen


def test_a_chat_with_an_image_continues_from_the_history(env: dict[str, str],
                                                         tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    with OpenAIServer(["A tiny square.", "Still a square."]) as server:
        first = convo_cmd("chat", "--no-stream", "--base-url", server.base_url,
                          "-a", str(tmp_path / "shot.png"), env=env, stdin="What is this?\n")
        assert first.returncode == 0, first.stderr
        again = convo_cmd("chat", "-c", "--no-stream", "--base-url", server.base_url,
                          env=env, stdin="And now?\n")
        assert again.returncode == 0, again.stderr
    # The history kept the image: the continued chat sends it again, exactly.
    assert server.requests[1]["messages"][:2] == [
        *SENT, {"role": "assistant", "content": "A tiny square."}]
    assert f"[image: shot.png, {len(PNG)} B]" in again.stdout
