"""Storage: the only place that writes SQL. Tables, migrations, the database handle and query functions."""

from kbagent.storage.database import Database, open_database

__all__ = ["Database", "open_database"]
