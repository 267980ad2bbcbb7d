"""p2pd: hand an AI coding agent's conversation to another machine or another agent."""

__version__ = "0.1.0"
