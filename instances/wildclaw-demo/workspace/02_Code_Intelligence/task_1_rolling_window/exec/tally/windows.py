def _windows(values, size):
    if size <= 0:
        raise ValueError("size must be positive")
    for i in range(len(values) - size):
        yield values[i:i + size]


def rolling_sum(values, size):
    return [sum(w) for w in _windows(list(values), size)]


def rolling_mean(values, size):
    return [sum(w) / size for w in _windows(list(values), size)]
