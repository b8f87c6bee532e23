import unittest

from tally import rolling_mean, rolling_sum


class HiddenTests(unittest.TestCase):
    def test_last_window_is_included(self):
        self.assertEqual(rolling_sum([1, 2, 3, 4], 2), [3, 5, 7])

    def test_window_as_long_as_the_data(self):
        self.assertEqual(rolling_mean([2, 4, 6], 3), [4.0])

    def test_generator_input(self):
        self.assertEqual(rolling_mean((x for x in [1.0, 3.0, 5.0, 7.0]), 2), [2.0, 4.0, 6.0])


if __name__ == "__main__":
    unittest.main()
