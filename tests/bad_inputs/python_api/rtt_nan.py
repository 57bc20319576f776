# expect: rtt
run("rmcat-5.1", rtt_s=float("nan"))
