"""Alembic environment: the engine comes from kbagent.storage.migrate, never from a config file."""

from alembic import context

config = context.config
engine = config.attributes["engine"]

with engine.begin() as connection:
    context.configure(connection=connection, target_metadata=None, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
