import sys

from tally import rolling_mean

temps = [float(x) for x in sys.argv[1:]] or [3.0, 4.0, 8.0, 5.0]
print("3-day means:", rolling_mean(temps, 3))
