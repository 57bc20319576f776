# expect: seconds: got inf, expected a duration above 0
from lowlat.reproduce import zhuge
zhuge.reproduce("/nonexistent-lowlat-out", seconds=float("inf"), progress=False)
