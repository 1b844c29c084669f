"""The ``kbagent`` command line (typer + rich)."""
