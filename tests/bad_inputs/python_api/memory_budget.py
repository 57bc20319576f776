# expect: memory budget of
run("dumbbell-cbr", memory_budget="1 kB")
