"""MLX backend (mlx + mlx-lm), registered once its issue lands."""
