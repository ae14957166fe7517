"""runs.origin and runs.provenance (imports, reruns), tests.adaptive

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=32), nullable=False, server_default='pdx'))
        batch_op.add_column(sa.Column('provenance', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.create_index(batch_op.f('ix_runs_origin'), ['origin'], unique=False)

    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('adaptive', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.drop_column('adaptive')

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_runs_origin'))
        batch_op.drop_column('provenance')
        batch_op.drop_column('origin')
