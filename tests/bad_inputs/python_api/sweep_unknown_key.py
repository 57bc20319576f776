# expect: unknown field `rat`
from lowlat import sweep
sweep.from_dict({"base": "dumbbell-cbr", "axes": {"bottleneck.rat": ["1 Mbit/s"]}})
