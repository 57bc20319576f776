# expect: duration
run({"bottleneck": {"rate": "1 Mbit/s"}, "flows": []})
