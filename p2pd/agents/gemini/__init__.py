"""Gemini CLI chat recordings (the JSON and the JSONL formats) → A2A conversation documents."""
