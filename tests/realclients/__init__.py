"""The real agent programs in the test suite: p2pd's imports resumed by Claude Code and Codex CLI, offline.

- ``package.json`` / ``package-lock.json``: the pinned programs (``@anthropic-ai/claude-code``, ``@openai/codex``),
  installed into ``node_modules/`` here by ``.ci/setup`` (or by the conftest when npm is there and they are not).
- ``standin.py``: the local stand-in for the model APIs (Anthropic Messages, OpenAI Responses over HTTP and
  websocket) that streams a fixed reply and records each request.
- ``programs.py``: homes, ``python -m p2pd import``, and one resume with each program.
- ``cases.py``: the matrix (corpus session × target × working directory × Codex index) and the job of each case
  and each control (the original resumed by its own program).
- ``turns.py``: the tool calls and user texts a request holds, from either API's shape or a Gemini file.
- ``conftest.py``: the install check and the thread pool that runs the selected cases ahead of the tests.
- ``test_resume_imports.py``: the assertions.
"""
