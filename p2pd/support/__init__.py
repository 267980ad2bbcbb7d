"""Small helpers used throughout: ``atomic`` (stage a file or folder, then move it into place) and
``eventloop`` (run a coroutine on uvloop where installed)."""
