# expect: bottleneck.rate
run({"duration": "1 s", "bottleneck": {"rate": "1 s"}, "flows": [{"id": "a", "kind": "cbr", "rate": "1 Mbit/s"}]})
