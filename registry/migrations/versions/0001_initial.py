"""initial schema: runs, tests, samples, models, hardware, environments

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('environments',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('hostname', sa.String(length=256), nullable=False),
    sa.Column('os', sa.String(length=64), nullable=False),
    sa.Column('python', sa.String(length=32), nullable=False),
    sa.Column('pdx_version', sa.String(length=32), nullable=False),
    sa.Column('manifest', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('hardware',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('models',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('format', sa.String(length=16), nullable=False),
    sa.Column('architecture', sa.String(length=64), nullable=False),
    sa.Column('n_params', sa.BigInteger(), nullable=False),
    sa.Column('dtype', sa.String(length=32), nullable=False),
    sa.Column('n_layers', sa.Integer(), nullable=False),
    sa.Column('n_heads', sa.Integer(), nullable=False),
    sa.Column('n_kv_heads', sa.Integer(), nullable=False),
    sa.Column('head_dim', sa.Integer(), nullable=False),
    sa.Column('n_embd', sa.Integer(), nullable=False),
    sa.Column('n_ff', sa.Integer(), nullable=False),
    sa.Column('n_vocab', sa.Integer(), nullable=False),
    sa.Column('n_ctx_train', sa.Integer(), nullable=False),
    sa.Column('file_bytes', sa.BigInteger(), nullable=False),
    sa.Column('synthetic', sa.String(length=64), nullable=True),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('runs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('backend', sa.String(length=64), nullable=False),
    sa.Column('engine', sa.String(length=64), nullable=False),
    sa.Column('engine_version', sa.String(length=64), nullable=True),
    sa.Column('engine_commit', sa.String(length=64), nullable=True),
    sa.Column('engine_settings', sa.JSON(), nullable=False),
    sa.Column('engine_details', sa.JSON(), nullable=False),
    sa.Column('threads', sa.Integer(), nullable=True),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('workload', sa.JSON(), nullable=False),
    sa.Column('command', sa.Text(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('parent_id', sa.String(length=32), nullable=True),
    sa.Column('pdx_version', sa.String(length=32), nullable=False),
    sa.Column('model_id', sa.String(length=64), nullable=False),
    sa.Column('hardware_id', sa.String(length=64), nullable=False),
    sa.Column('environment_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], ),
    sa.ForeignKeyConstraint(['hardware_id'], ['hardware.id'], ),
    sa.ForeignKeyConstraint(['model_id'], ['models.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_runs_backend'), ['backend'], unique=False)
        batch_op.create_index(batch_op.f('ix_runs_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_runs_hardware_id'), ['hardware_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_runs_model_id'), ['model_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_runs_status'), ['status'], unique=False)

    op.create_table('run_tags',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('tag', sa.String(length=128), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'tag')
    )
    with op.batch_alter_table('run_tags', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_tags_tag'), ['tag'], unique=False)

    op.create_table('tests',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('n_prompt', sa.Integer(), nullable=False),
    sa.Column('n_gen', sa.Integer(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('batch', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('warmup', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('engine', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'ordinal')
    )
    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tests_run_id'), ['run_id'], unique=False)

    op.create_table('samples',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('test_id', sa.Integer(), nullable=False),
    sa.Column('idx', sa.Integer(), nullable=False),
    sa.Column('ns', sa.BigInteger(), nullable=False),
    sa.Column('n_prompt', sa.Integer(), nullable=False),
    sa.Column('n_gen', sa.Integer(), nullable=False),
    sa.Column('prompt_ns', sa.BigInteger(), nullable=True),
    sa.Column('gen_ns', sa.BigInteger(), nullable=True),
    sa.Column('engine', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['test_id'], ['tests.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_samples_test_id'), ['test_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_samples_test_id'))

    op.drop_table('samples')
    with op.batch_alter_table('tests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tests_run_id'))

    op.drop_table('tests')
    with op.batch_alter_table('run_tags', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_tags_tag'))

    op.drop_table('run_tags')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_runs_status'))
        batch_op.drop_index(batch_op.f('ix_runs_model_id'))
        batch_op.drop_index(batch_op.f('ix_runs_hardware_id'))
        batch_op.drop_index(batch_op.f('ix_runs_created_at'))
        batch_op.drop_index(batch_op.f('ix_runs_backend'))

    op.drop_table('runs')
    op.drop_table('models')
    op.drop_table('hardware')
    op.drop_table('environments')
