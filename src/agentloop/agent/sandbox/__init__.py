"""The operating-system sandbox around Bash, its network proxy, and the environment children get."""
