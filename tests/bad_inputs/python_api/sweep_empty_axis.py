# expect: axes.seed: empty
from lowlat import sweep
sweep.from_dict({"base": "dumbbell-cbr", "axes": {"seed": []}})
