"""Helpers for agent frameworks, each behind an extra: ``openai-agents``
(:mod:`.openai_agents`) and ``langchain`` (:mod:`.langchain`)."""
