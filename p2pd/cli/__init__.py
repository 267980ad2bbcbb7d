"""The ``p2pd`` command line. It drives the rest of p2pd; nothing outside this package imports it.

- ``launch``        — the console script's first step: ``p2pd send FILE`` starts its packing process, then ``main``;
- ``main``          — the top-level parser (each group below registers its commands), ``main()``, and the
                      error → one line + exit code mapping;
- ``output``        — what every command prints with: the ``out``/``err`` consoles, escaping (``escape`` for our
                      text, ``shown`` for foreign text), sizes, tables (tab-separated when piped) and records,
                      :class:`CliUI` (code, verification, offer prompt, progress) and ``run`` for async commands;
- ``progress``      — the live displays: a transfer's bar (%, bytes, rate, time left), a step's spinner and time;
- ``options``       — options with one meaning everywhere (``--agent``, ``--json``), deprecated aliases, usage errors;
- ``conversations`` — ``p2pd sessions``, ``export``, ``import``, ``convert``, ``show``: conversations on this machine;
- ``exchange``      — ``p2pd send``, ``receive``, ``demo``: handing a conversation across with a code;
- ``daemon``        — ``p2pd serve``, ``transfers``, ``inbox``, ``handoffs``, ``send --to``: the daemon's clients;
- ``devices``       — ``p2pd pair``, ``devices``, ``links``;
- ``netopts``       — ``--relay-only`` and ``--connect-timeout`` of ``send``/``receive``;
- ``hook``          — ``p2pd hook``: the Claude Code hooks (their logic is :mod:`p2pd.daemon.hook` and
                      :mod:`p2pd.daemon.session_hooks`);
- ``agent_sessions`` — ``p2pd delegate``, ``delegations``, ``session-links``: agents working with agents.

What the commands print, ``--json`` objects included: ``OUTPUT.md`` beside this file.
"""
