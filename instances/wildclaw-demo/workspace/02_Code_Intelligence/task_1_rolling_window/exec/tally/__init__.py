from .windows import rolling_mean, rolling_sum

__all__ = ["rolling_mean", "rolling_sum"]
