"""OpenAI Codex CLI rollouts: reading (lossless), restoring, and importing for ``codex resume``."""
