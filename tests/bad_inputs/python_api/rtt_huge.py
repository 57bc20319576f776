# expect: rtt_s
run("rmcat-5.1", rtt_s=1e300)
