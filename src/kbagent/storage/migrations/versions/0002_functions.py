"""Python function library: stored functions with parameter declarations and init parameter values.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "python_functions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("owner", sa.String(128), nullable=False, server_default="local"),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("init_params", sa.JSON, nullable=False),
        sa.Column("public", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.UniqueConstraint("owner", "name", name="uq_python_functions_owner_name"),
    )
    op.create_index("ix_python_functions_public", "python_functions", ["public"])


def downgrade() -> None:
    op.drop_index("ix_python_functions_public", table_name="python_functions")
    op.drop_table("python_functions")
