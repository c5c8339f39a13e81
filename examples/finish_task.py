"""Task mode: the agent works until it calls ``finish_task``, and a human reviews the result.

In ``mode="task"`` the turn's own finish tool is ``finish_task``. It takes a summary and a
status (``done``, ``partial`` or ``blocked``); the turn ends with status ``pending_review``
and a ``TaskCompleted`` event with ``requires_review=True``. Here the agent gets half way and
says so.

Run it: ``python examples/finish_task.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import (
    FinishTaskTool,
    LinearTemplate,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)

state = {"task": "Rename the config files to the new naming scheme."}

FILES = {"app.cfg": "app.toml", "db.cfg": "db.toml", "legacy.ini": None}


@tool
def rename(path: str) -> str:
    """Rename one config file to the new scheme.

    Args:
        path: The file to rename.
    """
    if path not in FILES:
        raise FileNotFoundError(path)
    new = FILES[path]
    if new is None:
        return f"{path}: no rule for this format; left as it is"
    return f"renamed {path} -> {new}"


template = LinearTemplate([
    SystemTemplate("You are an autonomous agent. Work with the tools, then call finish_task "
                   "with a summary and a status: done, partial or blocked."),
    UserTemplate("Task: {{ task }} Files: app.cfg, db.cfg, legacy.ini."),
    ToolingTemplate([rename, FinishTaskTool()], mode="task", max_iterations=10),
])

mock_model = MockModel([
    "{rename(path='app.cfg')} {rename(path='db.cfg')} {rename(path='legacy.ini')}",
    """{finish_task('{"summary": "Renamed 2 of 3 files; legacy.ini has no rule", """
    """"status": "partial"}')}""",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
