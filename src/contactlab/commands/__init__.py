"""CLI subcommands: each module defines ``register(app: typer.Typer)``."""
