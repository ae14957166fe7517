"""ceilings: per-test bounds and fractions, per-run hardware figures

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ceiling_basis', sa.JSON(), nullable=True))

    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ceilings', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.drop_column('ceilings')

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('ceiling_basis')
