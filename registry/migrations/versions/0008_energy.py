"""tests.energy: the joules each test's timed windows drew, by meter (pdx.domain.energy)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0005: batch mode would copy and drop `tests` on SQLite.


def upgrade() -> None:
    op.add_column('tests', sa.Column('energy', sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column('tests', 'energy')
