"""Small helpers used throughout: ``atomic`` (stage a file or folder, then move it into place),
``eventloop`` (run a coroutine on uvloop where installed), ``gcpause`` (no garbage collection during bulk
document work), ``memory`` (give memory back to the system after big jobs), and ``text`` (peer text made
visible)."""
