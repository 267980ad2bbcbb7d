"""The daemon: device identity and pairing, the device network, and the local service (see DAEMON.md)."""
