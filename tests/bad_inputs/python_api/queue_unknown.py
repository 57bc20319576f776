# expect: queue
run("rmcat-5.1", queue="red")
