"""The ``p2pd`` command line. Nothing else in p2pd imports from here.

- ``main``    — the argument parser, the conversion/exchange commands and the exit-code mapping;
- ``daemon``  — ``p2pd serve``, ``transfers``, ``inbox``, ``handoffs``, ``hook``: clients of the daemon's API;
- ``devices`` — ``p2pd pair``, ``devices``, ``links``;
- ``netopts`` — ``--relay-only`` and ``--connect-timeout`` of ``send``/``receive``.
"""
