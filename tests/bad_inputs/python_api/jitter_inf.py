# expect: jitter
run("rmcat-5.1", rtt_s=0.1, jitter_s=float("inf"))
