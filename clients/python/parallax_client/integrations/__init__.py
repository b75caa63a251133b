"""Helpers for agent frameworks, each behind an extra: ``openai-agents``
(:mod:`.openai_agents`), ``langchain`` (:mod:`.langchain`) and ``crewai``
(:mod:`.crewai`)."""
