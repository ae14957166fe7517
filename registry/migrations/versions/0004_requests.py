"""per-request records of serving tests, and the scenario parameters of a test

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


# Plain ALTER TABLE for the new column, as in 0003: batch mode would copy and drop
# `tests` on SQLite, and with foreign keys on that cascades away every sample.


def upgrade() -> None:
    op.add_column('tests', sa.Column('spec', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))

    op.create_table('requests',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('test_id', sa.Integer(), nullable=False),
    sa.Column('sample_idx', sa.Integer(), nullable=True),
    sa.Column('idx', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('n_prompt', sa.Integer(), nullable=False),
    sa.Column('max_tokens', sa.Integer(), nullable=False),
    sa.Column('n_gen', sa.Integer(), nullable=False),
    sa.Column('send_ns', sa.BigInteger(), nullable=False),
    sa.Column('first_ns', sa.BigInteger(), nullable=True),
    sa.Column('end_ns', sa.BigInteger(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('http_status', sa.Integer(), nullable=True),
    sa.Column('finish_reason', sa.String(length=32), nullable=True),
    sa.Column('events', sa.JSON(), nullable=False),
    sa.Column('usage', sa.JSON(), nullable=False),
    sa.Column('engine', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['test_id'], ['tests.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_requests_test_id'), ['test_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_requests_test_id'))

    op.drop_table('requests')
    op.drop_column('tests', 'spec')
