"""The names of the environment variables that hold a model provider's credentials.

One list for every child process agentloop starts (Bash commands, hooks, MCP
stdio servers): none of them inherits these (``agent.sandbox.child_env``,
``mcp.env``), so a tool never receives the key that pays for the model.
"""

from __future__ import annotations

__all__ = ["PROVIDER_KEY_VARS"]

PROVIDER_KEY_VARS = frozenset({
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AZURE_OPENAI_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY",
    "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY",
    "AGENTLOOP_API_KEY",
})
"""Variables holding a model provider's credentials: never passed to a child."""
