"""Small helpers used throughout: ``atomic`` (stage a file or folder, then move it into place),
``eventloop`` (run a coroutine on uvloop where installed), ``gcpause`` (no garbage collection during bulk
document work), ``memory`` (give memory back to the system after big jobs), ``staging`` (work and staging
folders a run holds; the ones killed runs left, swept), ``text`` (peer text made visible), and ``workroom`` (where
a command's big work files go: off a temporary folder that lives in RAM)."""
