"""The built-in tools and the workspace they may touch."""
