"""requests.reasoning_ns, answer_ns, n_reasoning: a reasoning model's thinking and answer phases

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0006: batch mode would copy and drop the table on SQLite.


def upgrade() -> None:
    op.add_column('requests', sa.Column('reasoning_ns', sa.BigInteger(), nullable=True))
    op.add_column('requests', sa.Column('answer_ns', sa.BigInteger(), nullable=True))
    op.add_column('requests', sa.Column('n_reasoning', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('requests', schema=None) as batch_op:
        batch_op.drop_column('n_reasoning')
        batch_op.drop_column('answer_ns')
        batch_op.drop_column('reasoning_ns')
