"""The signaling server's ``GET /metrics``: Prometheus text exposition of the registry's counts."""

from __future__ import annotations

from collections import Counter

from signaling.protocol import ErrorCode

COUNTERS = (
    ("connections_accepted", "Connections accepted."),
    ("connections_refused", "Connections refused because the server was full."),
    ("connections_refused_address", "Connections refused because their address held its maximum."),
    ("handshakes_refused_rate", "WebSocket upgrades refused (HTTP 429): too many per minute from their address."),
    ("sockets_refused", "TCP connections dropped at once: too many sockets in all or from their peer."),
    ("connections_closed_rate_limit", "Connections closed for exceeding the message rate."),
    ("connections_closed_idle", "Connections closed for joining no room within the deadline."),
    ("connections_closed_slow", "Connections closed for not reading their messages."),
    ("connections_dropped_flood", "Connections dropped for sending frames far over the message rate."),
    ("messages_received", "Client messages within the rate limit."),
    ("messages_relayed", "Messages relayed to a peer."),
    ("rooms_created", "Rooms created."),
    ("rooms_expired", "Rooms closed by their TTL."),
    ("rooms_closed", "Rooms closed by a member."),
    ("pairings", "Rooms that reached two members."),
)


def render_metrics(connections: int, rooms: int, counters: Counter[str], errors: Counter[str]) -> str:
    """Counts only, never addresses, room names or peer ids."""
    lines = [
        "# HELP p2pd_signal_connections Open WebSocket connections.",
        "# TYPE p2pd_signal_connections gauge",
        f"p2pd_signal_connections {connections}",
        "# HELP p2pd_signal_rooms Open rooms.",
        "# TYPE p2pd_signal_rooms gauge",
        f"p2pd_signal_rooms {rooms}",
    ]
    for name, help_text in COUNTERS:
        lines += [f"# HELP p2pd_signal_{name}_total {help_text}", f"# TYPE p2pd_signal_{name}_total counter",
                  f"p2pd_signal_{name}_total {counters[name]}"]
    lines += ["# HELP p2pd_signal_errors_total Error replies by code.", "# TYPE p2pd_signal_errors_total counter"]
    lines += [f'p2pd_signal_errors_total{{code="{code.value}"}} {errors[code]}' for code in ErrorCode]
    return "\n".join(lines) + "\n"
