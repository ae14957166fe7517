"""requests.shard: which client process sent each request (pdx serve-bench --clients N)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0006: batch mode would copy and drop the table on SQLite.


def upgrade() -> None:
    op.add_column('requests', sa.Column('shard', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('requests', schema=None) as batch_op:
        batch_op.drop_column('shard')
