"""runs.origin and runs.provenance (imports, reruns), tests.adaptive

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

# Plain ALTER TABLE, not batch mode: a NOT NULL column with a default makes
# batch mode copy and drop `runs` on SQLite, and with foreign keys on (as pdx
# opens registries) dropping `runs` cascades to every test and sample.
# SQLite adds such columns in place, and drops columns in place since 3.35.


def upgrade() -> None:
    op.add_column('runs', sa.Column('origin', sa.String(length=32), nullable=False, server_default='pdx'))
    op.add_column('runs', sa.Column('provenance', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    op.create_index(op.f('ix_runs_origin'), 'runs', ['origin'], unique=False)
    op.add_column('tests', sa.Column('adaptive', sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column('tests', 'adaptive')
    op.drop_index(op.f('ix_runs_origin'), table_name='runs')
    op.drop_column('runs', 'provenance')
    op.drop_column('runs', 'origin')
