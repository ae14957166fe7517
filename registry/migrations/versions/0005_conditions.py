"""tests.conditions: what the machine did while each test ran

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0003 and 0004: batch mode would copy and drop `tests` on
# SQLite, and with foreign keys on that cascades away every sample.


def upgrade() -> None:
    op.add_column('tests', sa.Column('conditions', sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column('tests', 'conditions')
