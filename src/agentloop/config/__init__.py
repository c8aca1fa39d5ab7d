"""Configuration read at the edge: settings files, the agentloop home, and the prices they add.

Everything here reads files or the environment; the core never imports it.
What the core needs from settings (prices, budgets, paths) is read here and
passed in as arguments.
"""
