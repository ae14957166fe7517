"""run_leases: which process on which machine is running each unfinished run

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'run_leases',
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('host', sa.String(length=256), nullable=False),
        sa.Column('boot', sa.String(length=64), nullable=True),
        sa.Column('pid_namespace', sa.String(length=64), nullable=True),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('started', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('run_id'),
    )


def downgrade() -> None:
    op.drop_table('run_leases')
