"""scheduled send time of every request (open-loop serving tests)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0003 and 0004: batch mode would copy and drop the table on SQLite.


def upgrade() -> None:
    op.add_column('requests', sa.Column('scheduled_ns', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('requests', schema=None) as batch_op:
        batch_op.drop_column('scheduled_ns')
