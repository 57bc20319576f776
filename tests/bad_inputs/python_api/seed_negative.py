# expect: seed
run("dumbbell-cbr", seed=-1)
