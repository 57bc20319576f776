# expect: memory
validate({"duration": "10 s", "bin": "1 ns", "bottleneck": {"rate": "1 Mbit/s"}, "flows": [{"id": "a", "kind": "cbr", "rate": "1 kbit/s"}]})
